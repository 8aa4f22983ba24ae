#pragma once
// Which user the agent runs as: --user when given; else, when netbox was started
// through sudo (SUDO_UID, not root), the user who ran sudo, so the agent can work on
// that user's project; else a uid of its own for this launch (nobody's home, no groups),
// leased with the launch's /30 (subnet_pool.hpp): the kernel's per-user budgets
// (processes, inotify instances and watches, pending signals, message queue bytes, pipe
// pages) are per uid, and launches sharing nobody's would starve each other.
#include "netbox/launcher/privileges.hpp"

#include <map>
#include <optional>
#include <string>

namespace netbox::launcher {

struct AgentUserChoice {
  AgentUser agent;
  std::optional<AgentUser> invoking;  // the sudo caller, else the launcher's real user
  std::string why;                    // "--user", "the sudo caller (SUDO_UID)", "the default"
  // The default: `agent` is nobody's name and home until the launch leases a uid of its
  // own (use_launch_uid), and the uid and gid it reports are a range until then.
  bool own_uid = false;
};

// `user` as the launch's own uid and gid: nobody's home, no supplementary groups, named
// for no passwd entry (there is none).
void use_launch_uid(AgentUser& user, uid_t uid);

// "uid N, gid N (a uid of its own for this launch, ...)": the report's user line once the
// uid is leased.
std::string describe_launch_uid(const AgentUserChoice& who, uid_t uid);

// Throws LaunchError (exit 2) for an unknown --user, or a SUDO_UID naming no user.
AgentUserChoice choose_agent_user(const std::optional<std::string>& user_flag,
                                  const std::map<std::string, std::string>& launcher_env);

}  // namespace netbox::launcher
