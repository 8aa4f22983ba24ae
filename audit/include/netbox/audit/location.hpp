#pragma once
// Where the audit database lives, and the checks that keep it out of an agent's reach.
// An agent that can open the database, its -wal or its -shm can read other agents' rows
// and, with a POSIX lock on the -shm's lock bytes, stop the writer; so the store lives in
// a directory only its owner can enter, and a configured path that others could write
// (or that sits in the agent's own working directory) is refused.
#include "netbox/audit/schema.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::audit {

// /var/lib/netbox/audit.db for root; otherwise $XDG_STATE_HOME/netbox/audit.db, or
// ~/.local/state/netbox/audit.db without XDG_STATE_HOME.
std::filesystem::path default_db_path();
// The same for a given user and environment values (for tests).
std::filesystem::path default_db_path(bool root, const char* xdg_state_home, const char* home);

// Creates the default location's directory (and its parents) if missing, mode 0700, then
// checks it as check_db_location does. Throws DatabaseRejected naming `flag`.
void prepare_default_location(const std::filesystem::path& db, std::string_view flag);

// Throws DatabaseRejected, naming `flag`, the path and why, when the database's directory
// is group- or world-writable, or is owned by someone other than root or this
// user; when the database (or its -wal or -shm) exists and is not a regular file, is
// group- or world-writable, or is owned by someone else; or when `agent_workdir` is given
// (and is not "/") and the database is inside it. A missing directory passes: nothing can
// be created there, and opening the store then fails naming the path.
void check_db_location(const std::filesystem::path& db, std::string_view flag,
                       const std::optional<std::filesystem::path>& agent_workdir = std::nullopt);

}  // namespace netbox::audit
