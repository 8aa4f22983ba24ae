#include "netbox/launcher/guardian_enforcer.hpp"

#include <signal.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

namespace netbox::launcher {
namespace {

constexpr auto kKillWait = std::chrono::seconds(5);

// No cgroup to count the agent's processes by (--allow-degraded cgroup): its namespace's
// init, whose end takes every process of the namespace with it, SIGKILLed and awaited
// until the supervisor reaped it.
std::string kill_init(pid_t init) {
  ::kill(init, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + kKillWait;
  while (::kill(init, 0) == 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("the agent's init (pid " + std::to_string(init) + ") was still there 5 s after SIGKILL");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "killed: SIGTERM, then SIGKILL to the namespace's init after " + std::to_string(kKillGrace.count()) +
         " ms; it is gone, and every process of its namespace with it";
}

}  // namespace

proxy::GuardianEnforcer guardian_enforcer(AgentCgroup& cgroup, pid_t agent) {
  return [&cgroup, agent](std::string_view action, const std::string& why) -> std::string {
    // `why` names the guardian's rule, or the operator ("operator uid N ...").
    const std::string who = why.starts_with("operator ") ? "the operator" : "the guardian";
    if (action == "freeze") {
      cgroup.freeze();  // throws saying why it cannot
      std::cerr << "netbox launch: " << who << " froze the agent: " << why << "\n";
      return "frozen: no process of the agent runs until it is thawed or killed";
    }
    if (action == "resume") {
      if (!cgroup.can_freeze() || !cgroup.frozen()) return "not frozen: the agent runs";
      cgroup.thaw();
      std::cerr << "netbox launch: " << who << " resumed the agent: " << why << "\n";
      return "resumed: the agent runs again";
    }
    if (action != "kill") throw std::invalid_argument("unknown guardian action " + std::string(action));
    std::cerr << "netbox launch: " << who << " is killing the agent: " << why << "\n";
    if (cgroup.can_freeze() && cgroup.frozen()) cgroup.thaw();  // a frozen process never handles SIGTERM
    ::kill(agent, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + kKillGrace;
    while (std::chrono::steady_clock::now() < deadline && ::kill(agent, 0) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (cgroup.dirs().empty()) return kill_init(agent);
    if (!cgroup.kill_all(kKillWait))
      throw std::runtime_error("processes of the agent remain in its cgroup after SIGKILL");
    return "killed: SIGTERM, then SIGKILL after " + std::to_string(kKillGrace.count()) +
           " ms; no process of the agent is left";
  };
}

}  // namespace netbox::launcher
