#include "netbox/launcher/guardian_enforcer.hpp"

#include <signal.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

namespace netbox::launcher {

proxy::GuardianEnforcer guardian_enforcer(AgentCgroup& cgroup, pid_t agent) {
  return [&cgroup, agent](std::string_view action, const std::string& why) -> std::string {
    if (action == "freeze") {
      cgroup.freeze();  // throws saying why it cannot
      std::cerr << "netbox launch: the guardian froze the agent: " << why << "\n";
      return "frozen: no process of the agent runs until it is thawed or killed";
    }
    if (action != "kill") throw std::invalid_argument("unknown guardian action " + std::string(action));
    std::cerr << "netbox launch: the guardian is killing the agent: " << why << "\n";
    if (cgroup.can_freeze() && cgroup.frozen()) cgroup.thaw();  // a frozen process never handles SIGTERM
    ::kill(agent, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + kKillGrace;
    while (std::chrono::steady_clock::now() < deadline && ::kill(agent, 0) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!cgroup.kill_all(std::chrono::seconds(5)))
      throw std::runtime_error("processes of the agent remain in its cgroup after SIGKILL");
    return "killed: SIGTERM, then SIGKILL after " + std::to_string(kKillGrace.count()) +
           " ms; no process of the agent is left";
  };
}

}  // namespace netbox::launcher
