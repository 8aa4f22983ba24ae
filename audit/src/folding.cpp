// What makes two rows "the same" for CountedFolder (refusal_folder.hpp), and how a row that
// stands for varied ones reads.
#include "refusal_folder.hpp"

#include <nlohmann/json.hpp>

namespace netbox::audit::detail {
namespace {

std::string joined(std::initializer_list<const std::string*> parts) {
  std::string key;
  for (const std::string* part : parts) {
    key += *part;
    key += '\0';
  }
  return key;
}

}  // namespace

std::string RequestFolding::key(const AuditRecord& r) {
  std::string key = joined({&r.agent, &r.kind, &r.decision, &r.host, &r.rule, &r.reason});
  key += std::to_string(r.port);
  key += '\0';
  key += r.status ? std::to_string(*r.status) : std::string("-");
  return key;
}

void RequestFolding::widen(AuditRecord& r, std::uint32_t agent_rows) {
  r.host = "*";
  r.port = 0;
  r.method.clear();
  r.path.clear();
  r.resolved_addr.clear();
  r.rule.clear();
  r.error.clear();
  r.reason = "refusals of this agent past " + std::to_string(agent_rows) +
             " rows in one second, folded into this row; destinations vary";
}

std::string EventFolding::key(const Event& e) { return joined({&e.agent, &e.kind, &e.fold_key}); }

void EventFolding::widen(Event& e, std::uint32_t agent_rows) {
  // Every particular but the agent varies within this row: "*", as `host` of a request row.
  auto detail = nlohmann::json::parse(e.detail, nullptr, false);
  if (detail.is_object())
    for (auto& [name, value] : detail.items())
      if (name != "agent") value = "*";
  if (detail.is_object()) e.detail = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  e.message = e.kind + " events of agent " + e.agent + " past " + std::to_string(agent_rows) +
              " rows in one minute, folded into this row; their particulars vary";
  e.fold_key = "*";
}

}  // namespace netbox::audit::detail
