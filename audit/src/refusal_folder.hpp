#pragma once
// Folds repeated rows of one agent into counted rows, so a flood an agent drives (refused
// requests, exfiltration attempts) costs a bounded number of rows per window while every
// occurrence is still counted (the sum of `count` is the number of occurrences). One
// mechanism for both tables: CountedFolder over a Folding that says what makes two rows
// the same, whose agent caused them, and how a row that stands for varied ones reads.
// Not thread-safe: the writer calls it under its lock.
#include "netbox/audit/record.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace netbox::audit::detail {

template <class Row, class Folding>
class CountedFolder {
 public:
  using SteadyClock = std::chrono::steady_clock;

  // Per agent and window: the first `fold_after` rows with the same key get rows of their
  // own, later ones one counted row; past `agent_rows` rows of its own, every further row
  // of the agent in the window goes into one counted row per group (Folding::group), made
  // to say that its particulars vary (Folding::widen).
  CountedFolder(SteadyClock::duration window, std::uint32_t fold_after, std::uint32_t agent_rows)
      : window_(window), fold_after_(fold_after), agent_rows_(agent_rows) {}

  // True when `row` was taken into a counted row; false: it gets a row of its own.
  // Counted rows of windows found over on the way are appended to `due`.
  bool fold(Row& row, SteadyClock::time_point now, std::vector<Row>& due) {
    std::string key = Folding::key(row);
    auto kit = keys_.find(key);
    if (kit != keys_.end() && now - kit->second.start >= window_) {
      if (kit->second.folded) due.push_back(std::move(*kit->second.folded));
      kit->second = KeyWindow{now, 0, std::nullopt};
    }
    if (kit != keys_.end() && kit->second.rows >= fold_after_) {
      count_into(kit->second.folded, row);
      return true;
    }
    auto [ait, fresh] = agents_.try_emplace(Folding::agent(row), AgentWindow{now, 0, {}});
    AgentWindow& agent = ait->second;
    if (!fresh && now - agent.start >= window_) {
      for (auto& [group, folded] : agent.folded) due.push_back(std::move(*folded));
      agent = AgentWindow{now, 0, {}};
    }
    if (agent.rows >= agent_rows_) {
      std::optional<Row>& slot = agent.folded[Folding::group(row)];
      const bool first = !slot;
      count_into(slot, row);
      if (first) Folding::widen(*slot, agent_rows_);  // destinations vary: none stands for the others
      return true;
    }
    ++agent.rows;
    if (kit == keys_.end()) kit = keys_.emplace(std::move(key), KeyWindow{now, 0, std::nullopt}).first;
    ++kit->second.rows;
    return false;
  }

  // Appends the counted rows whose window is over (or all, at a flush or shutdown).
  void take_due(SteadyClock::time_point now, bool all, std::vector<Row>& out) {
    for (auto it = keys_.begin(); it != keys_.end();) {
      if (!all && now - it->second.start < window_) {
        ++it;
        continue;
      }
      if (it->second.folded) out.push_back(std::move(*it->second.folded));
      it = keys_.erase(it);
    }
    for (auto it = agents_.begin(); it != agents_.end();) {
      if (!all && now - it->second.start < window_) {
        ++it;
        continue;
      }
      for (auto& [group, folded] : it->second.folded) out.push_back(std::move(*folded));
      it = agents_.erase(it);
    }
  }

  bool empty() const { return keys_.empty() && agents_.empty(); }

 private:
  struct KeyWindow {
    SteadyClock::time_point start;
    std::uint32_t rows = 0;
    std::optional<Row> folded;
  };
  struct AgentWindow {
    SteadyClock::time_point start;
    std::uint32_t rows = 0;
    std::map<std::string, std::optional<Row>> folded;  // by group
  };

  // A row may already stand for several (a summary its producer counted): its count adds up.
  static void count_into(std::optional<Row>& slot, Row& row) {
    if (slot) {
      slot->count += row.count;
      return;
    }
    slot = std::move(row);  // the first folded row's time and particulars stand for the row
  }

  SteadyClock::duration window_;
  std::uint32_t fold_after_;
  std::uint32_t agent_rows_;
  std::unordered_map<std::string, KeyWindow> keys_;
  std::unordered_map<std::string, AgentWindow> agents_;
};

// Refusals (requests answered at once) per agent and second: the key is agent, kind,
// decision, host, port, rule, reason and status; past the agent's rows, one row per decision
// with host "*".
struct RequestFolding {
  static std::string key(const AuditRecord& r);
  static const std::string& agent(const AuditRecord& r) { return r.agent; }
  static const std::string& group(const AuditRecord& r) { return r.decision; }
  static void widen(AuditRecord& r, std::uint32_t agent_rows);
};
using RefusalFolder = CountedFolder<AuditRecord, RequestFolding>;
inline constexpr std::chrono::seconds kRefusalWindow{1};

// Events an agent caused (Event::agent set) per agent and minute: the key is agent, kind
// and Event::fold_key; past the agent's rows, one row per kind whose detail says "*" for
// every particular but the agent.
struct EventFolding {
  static std::string key(const Event& e);
  static const std::string& agent(const Event& e) { return e.agent; }
  static const std::string& group(const Event& e) { return e.kind; }
  static void widen(Event& e, std::uint32_t agent_rows);
};
using EventFolder = CountedFolder<Event, EventFolding>;
inline constexpr std::chrono::minutes kEventWindow{1};

}  // namespace netbox::audit::detail
