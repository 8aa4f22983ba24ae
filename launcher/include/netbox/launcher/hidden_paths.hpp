#pragma once
// Which of netbox's own files to hide in the agent's mount namespace, and how: the
// embedded proxy's audit database (with its -wal, -shm and -journal), the policy file
// and a running proxy's control socket. File permissions are the first wall (the
// audit store keeps its files root-only); this is the second, for files an operator
// made readable.
#include "netbox/launcher/mounts.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

struct NetboxFiles {
  std::optional<std::filesystem::path> audit_db;        // the embedded proxy's
  std::optional<std::filesystem::path> policy;          // --policy
  std::optional<std::filesystem::path> control_socket;  // --proxy-control
  std::optional<std::filesystem::path> proxy_policy;    // a running proxy's own policy file
  std::optional<std::filesystem::path> proxy_audit_db;  // and its audit store
  std::optional<std::filesystem::path> ca_key;          // the embedded proxy's CA key (--ca-dir)
};

// A folder holding one of them is covered as a whole (the -wal and -shm come and go
// while the agent runs; a policy or key replaced by a rename on the host would show
// through a mount on the old file), unless the agent needs it: it holds one of `needed`
// (the working directory, HOME, the command's path), or it is a system folder (/, a
// top-level one, /usr/..., /var/lib, ...). Then the folder of a policy, CA key or
// socket is covered all the same and its other entries shown again (HiddenPaths::shared;
// "/" excepted: there the file is covered), and each audit database file is covered on
// its own. Paths under the agent's fresh /tmp, /var/tmp, /dev/shm, /run and /var/run
// (and `fresh_home`, the agent's HOME, a fresh tmpfs) are hidden already and left out, unless they are inside one of `bound` (host paths
// bound into the view: the workdir, --rw, --ro). Throws LaunchError (exit 2) for a
// policy or CA key inside one of `writable` (the agent could swap it for its own).
HiddenPaths plan_hidden_paths(const NetboxFiles& files, const std::vector<std::filesystem::path>& needed,
                              const std::vector<std::filesystem::path>& bound = {},
                              const std::vector<std::filesystem::path>& writable = {},
                              const std::filesystem::path& fresh_home = {});

// Whether the init can hide everything `hidden` names without waiting for the proxy to
// open its audit store: every folder exists, and every file covered on its own does too
// (a -journal excepted: a store in WAL mode never makes one). False for a store not made
// yet: its -wal and -shm would appear after the hiding, where the agent sees them.
bool hidden_paths_exist(const HiddenPaths& hidden);

}  // namespace netbox::launcher
