#include "refusal_folder.hpp"

namespace netbox::audit::detail {
namespace {

std::string key_of(const AuditRecord& r) {
  std::string key;
  key.reserve(r.agent.size() + r.kind.size() + r.decision.size() + r.host.size() + r.rule.size() +
              r.reason.size() + 24);
  for (const std::string* part : {&r.agent, &r.kind, &r.decision, &r.host, &r.rule, &r.reason}) {
    key += *part;
    key += '\0';
  }
  key += std::to_string(r.port);
  key += '\0';
  key += r.status ? std::to_string(*r.status) : std::string("-");
  return key;
}

void count_into(std::optional<AuditRecord>& slot, AuditRecord& r) {
  if (slot) {
    ++slot->count;
    return;
  }
  slot = std::move(r);  // the first folded request's time, method and path stand for the row
  slot->count = 1;
}

}  // namespace

RefusalFolder::RefusalFolder(std::uint32_t fold_after, std::uint32_t agent_rows)
    : fold_after_(fold_after), agent_rows_(agent_rows) {}

bool RefusalFolder::fold(AuditRecord& r, SteadyClock::time_point now, std::vector<AuditRecord>& due) {
  std::string key = key_of(r);
  auto kit = keys_.find(key);
  if (kit != keys_.end() && now - kit->second.start >= kWindow) {
    if (kit->second.folded) due.push_back(std::move(*kit->second.folded));
    kit->second = KeyWindow{now, 0, std::nullopt};
  }
  if (kit != keys_.end() && kit->second.rows >= fold_after_) {
    count_into(kit->second.folded, r);
    return true;
  }
  auto [ait, fresh] = agents_.try_emplace(r.agent, AgentWindow{now, 0, {}});
  AgentWindow& agent = ait->second;
  if (!fresh && now - agent.start >= kWindow) {
    for (auto& [decision, row] : agent.folded) due.push_back(std::move(row));
    agent = AgentWindow{now, 0, {}};
  }
  if (agent.rows >= agent_rows_) {
    auto [fit, first] = agent.folded.try_emplace(r.decision);
    AuditRecord& row = fit->second;
    if (!first) {
      ++row.count;
      return true;
    }
    row = std::move(r);
    row.count = 1;
    // Destinations vary within this row: none of them stands for the others.
    row.host = "*";
    row.port = 0;
    row.method.clear();
    row.path.clear();
    row.resolved_addr.clear();
    row.rule.clear();
    row.error.clear();
    row.reason = "refusals of this agent past " + std::to_string(agent_rows_) +
                 " rows in one second, folded into this row; destinations vary";
    return true;
  }
  ++agent.rows;
  if (kit == keys_.end()) kit = keys_.emplace(std::move(key), KeyWindow{now, 0, std::nullopt}).first;
  ++kit->second.rows;
  return false;
}

void RefusalFolder::take_due(SteadyClock::time_point now, bool all, std::vector<AuditRecord>& out) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (!all && now - it->second.start < kWindow) {
      ++it;
      continue;
    }
    if (it->second.folded) out.push_back(std::move(*it->second.folded));
    it = keys_.erase(it);
  }
  for (auto it = agents_.begin(); it != agents_.end();) {
    if (!all && now - it->second.start < kWindow) {
      ++it;
      continue;
    }
    for (auto& [decision, row] : it->second.folded) out.push_back(std::move(row));
    it = agents_.erase(it);
  }
}

}  // namespace netbox::audit::detail
