#pragma once
// Folds repeated refusals of one agent into counted rows, so a flood of refused requests
// costs a bounded number of rows per second while every request is still counted
// (the sum of `count` is the number of requests). Not thread-safe: the writer calls it
// under its lock.
#include "netbox/audit/record.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace netbox::audit::detail {

class RefusalFolder {
 public:
  using SteadyClock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kWindow{1};

  // Per agent and window: the first `fold_after` refusals with the same key (agent, kind,
  // decision, host, port, rule, reason, status) get rows of their own, later ones one
  // counted row; past `agent_rows` rows of its own, every further refusal of the agent in
  // the window goes into one counted row per decision, with host "*".
  RefusalFolder(std::uint32_t fold_after, std::uint32_t agent_rows);

  // True when `record` was taken into a counted row; false: it gets a row of its own.
  // Counted rows of windows found over on the way are appended to `due`.
  bool fold(AuditRecord& record, SteadyClock::time_point now, std::vector<AuditRecord>& due);
  // Appends the counted rows whose window is over (or all, at a flush or shutdown).
  void take_due(SteadyClock::time_point now, bool all, std::vector<AuditRecord>& out);
  bool empty() const { return keys_.empty() && agents_.empty(); }

 private:
  struct KeyWindow {
    SteadyClock::time_point start;
    std::uint32_t rows = 0;
    std::optional<AuditRecord> folded;
  };
  struct AgentWindow {
    SteadyClock::time_point start;
    std::uint32_t rows = 0;
    std::map<std::string, AuditRecord> folded;  // by decision
  };

  std::uint32_t fold_after_;
  std::uint32_t agent_rows_;
  std::unordered_map<std::string, KeyWindow> keys_;
  std::unordered_map<std::string, AgentWindow> agents_;
};

}  // namespace netbox::audit::detail
