// `netbox agent list | kill | freeze | resume` on the proxy's side: the roster of attached
// agents, and the operator's action done by the agent's launcher (Guardians::operate).
#include "agents/operator_ops.hpp"

#include "base/proxy_runtime.hpp"

#include "netbox/audit/query.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

void operator_list(ProxyRuntime& rt, OperatorCall call) {
  auto list = nlohmann::json::array();
  for (const auto& a : rt.guardians.roster()) {
    const auto started = audit::Clock::time_point(std::chrono::milliseconds(a.card.started_ms));
    list.push_back({{"name", a.name},
                    {"profile", a.card.profile},
                    {"pid", a.card.pid},
                    {"state", a.card.frozen ? "frozen" : "running"},
                    {"started", audit::format_timestamp(started)},
                    {"denied", a.denied}});
  }
  control::Reply reply;
  reply.agents = list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  call.answer(std::move(reply));
}

void operator_act(ProxyRuntime& rt, OperatorCall call) {
  auto answer = std::move(call.answer);
  rt.guardians.operate(call.request.agent, call.request.op, call.uid, [answer](OperatorOutcome o) {
    control::Reply reply = o.ok ? control::Reply{} : control::Reply::refused(o.result);
    reply.result = std::move(o.result);
    answer(std::move(reply));
  });
}

}  // namespace netbox::proxy
