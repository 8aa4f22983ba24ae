// The totals the dashboard shows, over the same Filter as `netbox audit`.
#include "netbox/audit/query.hpp"

#include "reader.hpp"

#include <algorithm>

namespace netbox::audit {
namespace {


std::uint64_t count_column(const detail::Row& s, int column) { return static_cast<std::uint64_t>(s.column_int(column)); }

}  // namespace

std::uint64_t count_of(const DecisionCounts& counts, std::string_view decision) {
  for (const auto& c : counts)
    if (c.decision == decision) return c.requests;
  return 0;
}

Totals totals(const std::filesystem::path& db, const Filter& filter) {
  detail::Reader reader(db);
  const auto where = reader.where(filter);
  Totals t;
  reader.each("SELECT decision, SUM(count), SUM(bytes_up), SUM(bytes_down) FROM requests", where,
                          " GROUP BY decision ORDER BY decision", 0, [&t](const detail::Row& s) {
        t.decisions.push_back({s.column_text(0), count_column(s, 1)});
        t.requests += count_column(s, 1);
        t.bytes_up += count_column(s, 2);
        t.bytes_down += count_column(s, 3);
      });
  return t;
}

std::vector<DeniedHost> top_denied(const std::filesystem::path& db, const Filter& filter) {
  Filter denied = filter;
  denied.decision = "deny";
  detail::Reader reader(db);
  const auto where = reader.where(denied);
  std::vector<DeniedHost> hosts;
  reader.each("SELECT host, SUM(count) AS n FROM requests", where, " GROUP BY host ORDER BY n DESC, host", filter.limit,
              [&hosts](const detail::Row& s) { hosts.push_back({s.column_text(0), count_column(s, 1), {}}); });
  for (auto& host : hosts) {
    auto of_host = where;
    of_host.add("host = ?", host.host);
    // Each reason comes with the rule of its latest denial.
    reader.each("SELECT reason, " + reader.latest("rule") + ", SUM(count) AS n, MAX(ts) AS last FROM requests", of_host,
                " GROUP BY reason ORDER BY n DESC, last DESC", kReasonsPerDeniedHost, [&host](const detail::Row& s) {
                  host.reasons.push_back(
                      {s.column_text(0), s.column_text(1), count_column(s, 2), detail::stored_time(s.column_text(3))});
                });
  }
  return hosts;
}

std::vector<AgentActivity> agent_activity(const std::filesystem::path& db, const Filter& filter) {
  detail::Reader reader(db);
  const auto where = reader.where(filter);
  std::vector<AgentActivity> agents;
  // Per agent and decision, folded into one entry per agent here: the order by last seen
  // needs the whole agent, so the limit applies after.
  reader.each(
      "SELECT agent, decision, SUM(count), SUM(bytes_up), SUM(bytes_down), MAX(ts) FROM requests", where,
      " GROUP BY agent, decision ORDER BY agent, decision", 0, [&agents](const detail::Row& s) {
        auto agent = s.column_text(0);
        if (agents.empty() || agents.back().agent != agent) agents.push_back({std::move(agent), {}, 0, 0, 0, {}});
        auto& a = agents.back();
        a.decisions.push_back({s.column_text(1), count_column(s, 2)});
        a.requests += count_column(s, 2);
        a.bytes_up += count_column(s, 3);
        a.bytes_down += count_column(s, 4);
        a.last_seen = std::max(a.last_seen, detail::stored_time(s.column_text(5)));
      });
  std::stable_sort(agents.begin(), agents.end(),
                   [](const AgentActivity& a, const AgentActivity& b) { return a.last_seen > b.last_seen; });
  if (filter.limit != 0 && agents.size() > filter.limit) agents.resize(filter.limit);
  return agents;
}

std::vector<TimelinePoint> timeline(const std::filesystem::path& db, const Filter& filter,
                                    std::chrono::seconds bucket) {
  bucket = std::max(bucket, std::chrono::seconds(1));
  detail::Reader reader(db);
  const auto where = reader.where(filter);
  const std::string b = reader.ts_bucket(bucket);
  std::vector<TimelinePoint> points;
  reader.each("SELECT " + b + " AS bucket, decision, SUM(count) FROM requests", where,
              " GROUP BY bucket, decision ORDER BY bucket, decision", 0, [&](const detail::Row& s) {
                const Clock::time_point start{bucket * s.column_int(0)};
                if (points.empty() || points.back().start != start) points.push_back({start, {}});
                points.back().decisions.push_back({s.column_text(1), count_column(s, 2)});
              });
  return points;
}

}  // namespace netbox::audit
