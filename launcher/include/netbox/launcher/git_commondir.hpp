#pragma once
// A main repository's git folder has no `commondir`: only a linked worktree's does, and git
// then takes config and hooks from the folder it names (core.fsmonitor runs a command at
// every `git status`). netbox cannot bind a file that does not exist read-only, so one the
// agent made during the launch is set aside when the agent is gone, before the host's git
// runs there again (docs/launch.md, "Files the host runs").
#include <string>
#include <vector>

namespace netbox::launcher {

// For each git folder (host paths, AgentMounts::git_folders_without_commondir): a
// `commondir` found there now is renamed to `commondir.netbox-PID`. Returns the paths
// set aside, as "FOLDER/commondir -> FOLDER/commondir.netbox-PID".
std::vector<std::string> set_aside_new_commondirs(const std::vector<std::string>& git_folders);

}  // namespace netbox::launcher
