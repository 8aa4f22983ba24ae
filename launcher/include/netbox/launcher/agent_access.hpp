#pragma once
// Whether the agent's user can write a host folder: the kernel's own answer (owner,
// mode, ACLs, supplementary groups), asked as that user. A writable bind of a folder the
// agent's uid cannot write is not writable, and the report must say so (issue 22, 15).
#include "netbox/launcher/privileges.hpp"

#include <filesystem>
#include <string>

namespace netbox::launcher {

// Empty when `user` may write `path`; else why not ("owner uid 0, mode 0755"). Asked
// with access(2) in a child that takes the user's ids when the launcher is root, with
// the launcher's own ids when they are the user's, else from stat's owner and mode.
std::string why_agent_cannot_write(const std::filesystem::path& path, const AgentUser& user);

}  // namespace netbox::launcher
