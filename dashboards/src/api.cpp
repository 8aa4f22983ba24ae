#include "netbox/dashboards/api.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

namespace netbox::dashboards {
namespace {

using json = nlohmann::json;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// A WHERE clause built from the query parameters, with its bound values.
struct Where {
  std::string sql;
  std::vector<std::string> args;
  void add(const std::string& clause, std::string arg) {
    sql += sql.empty() ? " WHERE " : " AND ";
    sql += clause;
    args.push_back(std::move(arg));
  }
};

Where where_from(const QueryParams& q, bool with_decision = true) {
  Where w;
  if (auto it = q.find("agent"); it != q.end() && !it->second.empty()) w.add("agent = ?", it->second);
  if (with_decision) {
    if (auto it = q.find("decision"); it != q.end() && !it->second.empty()) {
      if (it->second != "allow" && it->second != "deny" && it->second != "report")
        throw BadParameter("decision must be allow, deny or report, not '" + it->second + "'");
      w.add("decision = ?", it->second);
    }
  }
  if (auto it = q.find("host"); it != q.end() && !it->second.empty()) w.add("host GLOB ?", it->second);
  if (auto it = q.find("since"); it != q.end() && !it->second.empty()) {
    try {
      w.add("ts >= ?", audit::format_timestamp(audit::parse_since(it->second)));
    } catch (const std::invalid_argument& e) {
      throw BadParameter(std::string("since: ") + e.what());
    }
  }
  return w;
}

Db open(const std::filesystem::path& path) { return Db(audit::open_for_reading(path)); }

Stmt prepare(sqlite3* db, const std::string& sql, const std::vector<std::string>& args) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("audit query failed: ") + sqlite3_errmsg(db));
  Stmt s(raw);
  for (std::size_t i = 0; i < args.size(); ++i)
    sqlite3_bind_text(raw, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
  return s;
}

json column(sqlite3_stmt* s, int i) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_INTEGER: return sqlite3_column_int64(s, i);
    case SQLITE_FLOAT: return sqlite3_column_double(s, i);
    case SQLITE_NULL: return nullptr;
    default: return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, i)));
  }
}

// Every row of a statement as JSON objects keyed by column name.
json rows(sqlite3* db, sqlite3_stmt* s) {
  json out = json::array();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    json row = json::object();
    for (int i = 0; i < sqlite3_column_count(s); ++i) row[sqlite3_column_name(s, i)] = column(s, i);
    out.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) throw std::runtime_error(std::string("audit query failed: ") + sqlite3_errmsg(db));
  return out;
}

std::size_t limit_from(const QueryParams& q, std::size_t fallback) {
  auto it = q.find("limit");
  if (it == q.end() || it->second.empty()) return fallback;
  std::size_t n = 0;
  for (char c : it->second) {
    if (c < '0' || c > '9' || n > 1000000) throw BadParameter("limit must be a positive whole number, not '" + it->second + "'");
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  if (n == 0) throw BadParameter("limit must be a positive whole number, not '" + it->second + "'");
  return std::min<std::size_t>(n, 1000);
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

std::string api_summary(const std::filesystem::path& path, const QueryParams& q, const LiveStats& live) {
  auto db = open(path);
  Where w = where_from(q);
  json totals = {{"allow", 0}, {"deny", 0}, {"report", 0}, {"bytes_up", 0}, {"bytes_down", 0}};
  {
    auto s = prepare(db.get(),
                     "SELECT decision, SUM(count), COALESCE(SUM(bytes_up),0), COALESCE(SUM(bytes_down),0) FROM requests" +
                         w.sql + " GROUP BY decision",
                     w.args);
    std::int64_t up = 0, down = 0;
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      std::string d = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      if (totals.contains(d)) totals[d] = sqlite3_column_int64(s.get(), 1);
      up += sqlite3_column_int64(s.get(), 2);
      down += sqlite3_column_int64(s.get(), 3);
    }
    totals["bytes_up"] = up;
    totals["bytes_down"] = down;
  }
  // Top denied hosts in the window, each with the reason of its latest denial.
  Where wd = where_from(q, false);
  wd.add("decision = ?", "deny");
  auto s = prepare(db.get(),
                   "SELECT host, SUM(count) AS count, "
                   "(SELECT reason FROM requests r2 WHERE r2.host = r.host AND r2.decision = 'deny' ORDER BY id DESC LIMIT 1) AS reason, "
                   "(SELECT rule FROM requests r2 WHERE r2.host = r.host AND r2.decision = 'deny' ORDER BY id DESC LIMIT 1) AS rule "
                   "FROM requests r" + wd.sql + " GROUP BY host ORDER BY count DESC, host LIMIT 10",
                   wd.args);
  json out = {
      {"totals", totals},
      {"top_denied", rows(db.get(), s.get())},
      {"live",
       {{"requests", {{"allow", live.allow}, {"deny", live.deny}, {"report", live.report}}},
        {"active_connections", live.active_connections},
        {"active_tunnels", live.active_tunnels},
        {"bytes_up", live.bytes_up},
        {"bytes_down", live.bytes_down}}},
  };
  return out.dump();
}

std::string api_agents(const std::filesystem::path& path, const QueryParams& q) {
  auto db = open(path);
  Where w = where_from(q);
  auto s = prepare(db.get(),
                   "SELECT agent, SUM(count) AS requests, "
                   "SUM((decision = 'allow') * count) AS allowed, SUM((decision = 'deny') * count) AS denied, "
                   "SUM((decision = 'report') * count) AS reported, COALESCE(SUM(bytes_up),0) AS bytes_up, "
                   "COALESCE(SUM(bytes_down),0) AS bytes_down, MAX(ts) AS last_seen FROM requests" +
                       w.sql + " GROUP BY agent ORDER BY last_seen DESC",
                   w.args);
  return rows(db.get(), s.get()).dump();
}

std::string api_requests(const std::filesystem::path& path, const QueryParams& q) {
  auto db = open(path);
  Where w = where_from(q);
  auto s = prepare(db.get(),
                   "SELECT id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, "
                   "reason, status, bytes_up, bytes_down, duration_ms, error, count FROM requests" +
                       w.sql + " ORDER BY id DESC LIMIT " + std::to_string(limit_from(q, 100)),
                   w.args);
  return rows(db.get(), s.get()).dump();
}

}  // namespace netbox::dashboards
