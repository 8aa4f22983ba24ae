#pragma once
// Which user the agent runs as: --user when given; else, when netbox was started
// through sudo (SUDO_UID, not root), the user who ran sudo, so the agent can work on
// that user's project; else nobody.
#include "netbox/launcher/privileges.hpp"

#include <map>
#include <optional>
#include <string>

namespace netbox::launcher {

struct AgentUserChoice {
  AgentUser agent;
  std::optional<AgentUser> invoking;  // the sudo caller, else the launcher's real user
  std::string why;                    // "--user", "the sudo caller (SUDO_UID)", "the default"
};

// Throws LaunchError (exit 2) for an unknown --user, or a SUDO_UID naming no user.
AgentUserChoice choose_agent_user(const std::optional<std::string>& user_flag,
                                  const std::map<std::string, std::string>& launcher_env);

}  // namespace netbox::launcher
