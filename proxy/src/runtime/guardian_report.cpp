// Server::guardian_report: the guardian's state of one agent, for /api/agents/{name}.
#include "netbox/proxy/server.hpp"

#include "base/proxy_runtime.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

std::optional<std::string> Server::guardian_report(const std::string& agent) const {
  const auto guard = impl_->guardians.find(agent);
  if (!guard) return std::nullopt;
  const auto r = guard->report();
  nlohmann::json budgets = nlohmann::json::array();
  for (const auto& b : r.budgets)
    budgets.push_back({{"rule", b.rule}, {"used", b.used}, {"limit", b.limit}, {"spent", b.used >= b.limit}});
  nlohmann::json actions = nlohmann::json::array();
  for (const auto& a : r.actions)
    actions.push_back({{"rule", a.rule}, {"trigger", a.trigger}, {"action", a.action}, {"result", a.result},
                       {"ts_ms", a.ts_ms}});
  nlohmann::json j{{"agent", agent}, {"budgets", std::move(budgets)}, {"violations", r.violations},
                   {"actions", std::move(actions)}};
  return j.dump();
}

}  // namespace netbox::proxy
