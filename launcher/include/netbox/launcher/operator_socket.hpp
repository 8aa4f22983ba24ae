#pragma once
// A launch's own operator socket (issue 25 item 3): the embedded proxy answers
// `netbox agent list | kill | freeze | resume` there, for its one agent. The sockets live
// in STATE/launches (/run/netbox/launches), a folder of root's with mode 0700, named by the
// launcher's pid; the agent's view has a /run of its own, and its uid could not enter the
// folder anyway. See docs/launch.md, "Operator control".
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

std::filesystem::path operator_sockets_dir(const std::filesystem::path& state_dir);

// The socket this launch serves (STATE/launches/PID.sock), its folder made or checked
// (root's, not a symlink, mode 0700). Nullopt, said on stderr, when the folder is not
// safe: the launch then runs without an operator socket rather than one others could reach.
std::optional<std::filesystem::path> prepare_operator_socket(const std::filesystem::path& state_dir, pid_t launcher);

// For `netbox gc`: removes the sockets of STATE/launches whose launcher is gone (no
// process holds its pid, or one that started after the socket was made) and on which
// nothing listens; says each in `removed`. A live launch's socket is never touched.
void collect_operator_sockets(const std::filesystem::path& state_dir, std::vector<std::string>& removed);

}  // namespace netbox::launcher
