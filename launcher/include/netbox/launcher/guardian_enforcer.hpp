#pragma once
// The launcher's reaction to the guardian's actions (issue 25), for the embedded proxy:
// `freeze` freezes the agent's cgroup; `kill` thaws it if frozen, sends SIGTERM to the
// agent, waits out a grace (kKillGrace) and then SIGKILLs every process left in the cgroup,
// answering only once the cgroup is empty. A kill that leaves a process behind throws:
// the guardian reports it loudly, never as done. Each action is said on stderr, naming
// the rule.
#include "netbox/launcher/cgroup.hpp"
#include "netbox/proxy/agent_attachment.hpp"

#include <sys/types.h>

#include <chrono>

namespace netbox::launcher {

inline constexpr std::chrono::milliseconds kKillGrace{2000};

proxy::GuardianEnforcer guardian_enforcer(AgentCgroup& cgroup, pid_t agent);

}  // namespace netbox::launcher
