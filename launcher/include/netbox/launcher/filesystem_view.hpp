#pragma once
// What the agent's filesystem view will be, decided in the launcher from the flags
// (--workdir, --ro, --rw, --hide) and the users, before anything is created; the
// confined child then builds it (mounts.hpp).
//
// Paths may be relative (to the launcher's current directory); every path is made
// canonical (symlinks resolved) and the agent sees it at that canonical path.
#include "netbox/launcher/agent_user_choice.hpp"
#include "netbox/launcher/degraded_layers.hpp"
#include "netbox/launcher/launch_options.hpp"
#include "netbox/launcher/mounts.hpp"
#include "netbox/launcher/privileges.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::launcher {

// Credentials of the usual tools, hidden in every HOME that matters (the agent's
// user's and the invoking user's) even where a bind would show them.
inline constexpr std::array<std::string_view, 11> kSecretHomePaths = {
    ".ssh",    ".aws",   ".config/gcloud",   ".azure", ".kube",  ".docker",
    ".gnupg",  ".netrc", ".git-credentials", ".npmrc", ".pypirc"};

struct FilesystemRequest {
  std::optional<std::string> workdir;  // --workdir; unset: the launcher's current directory
  std::string cwd;                     // the launcher's; empty when it is gone
  std::vector<std::string> ro, rw, hide;
  std::optional<std::filesystem::path> audit_db;  // the embedded proxy's: its folder is never writable by --rw
  std::uint64_t workdir_quota = 0;     // --workdir-quota in bytes; 0: written in place
  bool commit = false;                 // --commit
  // --writable-hooks: leave the git hooks and config, .envrc, .direnv and .vscode of
  // writable folders writable (by default they are bound read-only; see
  // protect_host_executed in filesystem_view.cpp).
  bool writable_hooks = false;
  AgentUser agent;
  std::vector<std::string> secret_homes;  // HOMEs whose kSecretHomePaths are hidden
};

struct FilesystemView {
  AgentMounts mounts;   // everything but tmp_bytes
  std::string workdir;  // canonical; the agent starts here. Empty: no writable workdir
  std::string no_workdir_reason;  // why, when empty
  std::uint64_t workdir_quota = 0;  // the workdir is an overlay on a tmpfs this big
  // Writable binds (by their shown path) the agent's user cannot write for the host's
  // owner, mode or ACLs, and why ("owner uid 0, gid 0, mode 0755"): reported as such.
  std::map<std::string, std::string> agent_cannot_write;
  std::vector<std::string> warnings;  // e.g. an explicit --workdir of /tmp or HOME
};

// Throws LaunchError: exit 2 for bad input (a --rw of a system folder or of the audit
// database's folder, an empty path, --hide /, no --workdir while the current directory
// is /, /tmp, /var/tmp, /dev/shm or one of the request's HOMEs), exit 125 for a source that does not
// exist, unless `degraded` accepts that layer (then it is noted there and left out).
FilesystemView plan_filesystem_view(const FilesystemRequest& request, DegradedLayers& degraded);

// The request of a launch: its flags, the agent's user and the invoking one (whose
// credentials are hidden too), the embedded proxy's database. Throws LaunchError (exit
// 2) for a malformed --workdir-quota.
FilesystemRequest filesystem_request(const LaunchOptions& options, const AgentUserChoice& who,
                                     const std::optional<std::filesystem::path>& audit_db, const std::string& cwd);

// Why `path` (canonical) may not be made writable, or empty when it may.
std::string why_not_writable(const std::filesystem::path& path, const std::optional<std::filesystem::path>& audit_db);

}  // namespace netbox::launcher
