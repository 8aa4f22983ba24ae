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

// A folder holding the database or the socket is covered as a whole (the -wal and
// -shm come and go while the agent runs), unless the agent needs it: it holds one of
// `needed` (the working directory, HOME, the command's path), or it is a system folder
// (/, a top-level one, /usr/..., /var/lib, ...). Then each file is covered on its own. The policy is always
// covered on its own. Paths under the agent's fresh /tmp, /var/tmp, /dev/shm, /run and
// /var/run are hidden already and left out, unless they are inside one of `bound`
// (host paths bound into the view: the workdir, --rw, --ro).
HiddenPaths plan_hidden_paths(const NetboxFiles& files, const std::vector<std::filesystem::path>& needed,
                              const std::vector<std::filesystem::path>& bound = {});

}  // namespace netbox::launcher
