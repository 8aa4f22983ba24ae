// The admin JSON API: query parameters become an audit::Filter, the audit module's values
// become JSON. The SQL, the column list and the NULL convention live in the audit module.
#include "netbox/dashboards/api.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/tables.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <optional>

namespace netbox::dashboards {
namespace {

using json = nlohmann::json;

// Rows in one /api/requests answer at most, whatever `limit` asks: the answer is built in
// memory by the proxy's process.
constexpr std::size_t kMaxRows = 1000;
constexpr std::size_t kDefaultRows = 100;
constexpr std::size_t kTopDeniedHosts = 10;

std::optional<std::string> param(const QueryParams& q, const char* name) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// A parser's std::invalid_argument becomes a 400 naming the parameter.
template <class Parse>
auto checked(const char* name, Parse&& parse) {
  try {
    return parse();
  } catch (const std::invalid_argument& e) {
    throw BadParameter(std::string(name) + ": " + e.what());
  }
}

// agent, decision, host (a glob) and since; every aggregate reads all matching rows.
audit::Filter filter_from(const QueryParams& q) {
  audit::Filter f;
  f.agent = param(q, "agent");
  f.host_glob = param(q, "host");
  if (auto d = param(q, "decision")) f.decision = checked("decision", [&] { return audit::parse_decision(*d); });
  if (auto s = param(q, "since")) f.since = checked("since", [&] { return audit::parse_since(*s); });
  f.limit = 0;
  return f;
}

// `limit`: a whole number; 0 (as for `netbox audit --limit 0`) asks for every row, which
// this API answers with its most, kMaxRows, as it answers any larger number.
std::size_t limit_from(const QueryParams& q) {
  auto text = param(q, "limit");
  if (!text) return kDefaultRows;
  std::size_t n = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') throw BadParameter("limit: '" + *text + "' is not a whole number");
    n = std::min<std::size_t>(n * 10 + static_cast<std::size_t>(c - '0'), kMaxRows + 1);
  }
  return n == 0 ? kMaxRows : std::min(n, kMaxRows);
}

// NULL in the store is an empty string in audit's values and null here, as in
// `netbox audit --format json`.
json text_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// allow, deny and report always (0 when none), and any other decision the store holds.
json decisions_json(const audit::DecisionCounts& counts) {
  json out = {{"allow", 0}, {"deny", 0}, {"report", 0}};
  for (const auto& c : counts) out[c.decision] = c.requests;
  return out;
}

json denied_json(const audit::DeniedHost& h) {
  json reasons = json::array();
  for (const auto& r : h.reasons)
    reasons.push_back({{"reason", text_or_null(r.reason)},
                       {"rule", text_or_null(r.rule)},
                       {"count", r.requests},
                       {"last_seen", audit::format_timestamp(r.last_seen)}});
  return {{"host", h.host}, {"count", h.requests}, {"reasons", std::move(reasons)}};
}

json agent_json(const audit::AgentActivity& a) {
  return {{"agent", a.agent},
          {"requests", a.requests},
          {"allowed", audit::count_of(a.decisions, "allow")},
          {"denied", audit::count_of(a.decisions, "deny")},
          {"reported", audit::count_of(a.decisions, "report")},
          {"decisions", decisions_json(a.decisions)},
          {"bytes_up", a.bytes_up},
          {"bytes_down", a.bytes_down},
          {"last_seen", audit::format_timestamp(a.last_seen)}};
}

// kind, agent, since and limit, for the tables of events and launches.
audit::TableFilter table_filter_from(const QueryParams& q, std::size_t limit) {
  audit::TableFilter f;
  f.kind = param(q, "kind");
  f.agent = param(q, "agent");
  if (auto s = param(q, "since")) f.since = checked("since", [&] { return audit::parse_since(*s); });
  f.limit = limit;
  return f;
}

// A round bucket length giving about kTimelineBuckets buckets over `window`: the chart
// has a point per bucket whatever the window, and its x-axis reads in whole units.
constexpr long kTimelineBuckets = 120;
std::chrono::seconds bucket_for(std::chrono::seconds window) {
  static constexpr long kRound[] = {5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400};
  const long wanted = window.count() / kTimelineBuckets;
  for (long r : kRound)
    if (r >= wanted) return std::chrono::seconds(r);
  return std::chrono::seconds(86400 * ((wanted + 86399) / 86400));
}

long long epoch_seconds(audit::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

QueryParams parse_query(std::string_view query) {
  auto decode = [](std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') out += ' ';
      else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else out += s[i];
    }
    return out;
  };
  QueryParams out;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    out[decode(part.substr(0, eq))] = eq == std::string_view::npos ? "" : decode(part.substr(eq + 1));
  }
  return out;
}

std::string api_summary(const std::filesystem::path& db, const QueryParams& q, const LiveStats& live) {
  const auto filter = filter_from(q);
  const auto t = audit::totals(db, filter);
  json totals = decisions_json(t.decisions);
  totals["bytes_up"] = t.bytes_up;
  totals["bytes_down"] = t.bytes_down;
  auto denied_filter = filter;
  denied_filter.limit = kTopDeniedHosts;
  json top_denied = json::array();
  for (const auto& h : audit::top_denied(db, denied_filter)) top_denied.push_back(denied_json(h));
  json out = {
      {"totals", std::move(totals)},
      {"top_denied", std::move(top_denied)},
      {"live",
       {{"requests", {{"allow", live.allow}, {"deny", live.deny}, {"report", live.report}, {"cap", live.cap}, {"error", live.error}}},
        {"active_connections", live.active_connections},
        {"active_tunnels", live.active_tunnels},
        {"bytes_up", live.bytes_up},
        {"bytes_down", live.bytes_down}}},
  };
  return out.dump();
}

std::string api_agents(const std::filesystem::path& db, const QueryParams& q) {
  json out = json::array();
  for (const auto& a : audit::agent_activity(db, filter_from(q))) out.push_back(agent_json(a));
  return out.dump();
}

std::string api_requests(const std::filesystem::path& db, const QueryParams& q) {
  auto filter = filter_from(q);
  filter.limit = limit_from(q);
  return audit::format_requests(audit::query_requests(db, filter), "json");
}

std::string api_timeline(const std::filesystem::path& db, const QueryParams& q, audit::Clock::time_point now) {
  auto filter = filter_from(q);
  if (!filter.since) filter.since = now - std::chrono::hours(1);
  const auto window = std::chrono::duration_cast<std::chrono::seconds>(now - *filter.since);
  const auto bucket = bucket_for(std::max(window, std::chrono::seconds(1)));
  json points = json::array();
  for (const auto& p : audit::timeline(db, filter, bucket)) {
    json point = decisions_json(p.decisions);
    point["t"] = epoch_seconds(p.start);
    points.push_back(std::move(point));
  }
  return json{{"bucket_seconds", bucket.count()},
              {"from", epoch_seconds(*filter.since)},
              {"to", epoch_seconds(now)},
              {"points", std::move(points)}}
      .dump();
}

std::string api_events(const std::filesystem::path& db, const QueryParams& q) {
  return audit::format_events(audit::query_events(db, table_filter_from(q, limit_from(q))), "json");
}

std::string api_launches(const std::filesystem::path& db, const QueryParams& q) {
  return audit::format_agents(audit::query_agents(db, table_filter_from(q, limit_from(q))), "json");
}

}  // namespace netbox::dashboards
