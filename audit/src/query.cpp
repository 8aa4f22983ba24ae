#include "netbox/audit/query.hpp"

#include "netbox/audit/schema.hpp"
#include "sqlite.hpp"
#include "timestamp.hpp"

#include <string>
#include <vector>

namespace netbox::audit {
namespace {

using detail::Statement;

// The WHERE clause for a filter, and its parameters in order. Every value is bound,
// never spliced into the SQL, so a host glob like "x' OR 1" is only a glob.
struct Where {
  std::string sql;
  std::vector<std::string> params;
};

Where where_clause(const Filter& f) {
  Where w;
  auto add = [&w](const char* condition, std::string value) {
    w.sql += w.sql.empty() ? " WHERE " : " AND ";
    w.sql += condition;
    w.params.push_back(std::move(value));
  };
  if (f.agent) add("agent = ?", *f.agent);
  if (f.decision) add("decision = ?", *f.decision);
  if (f.host_glob) add("host GLOB ?", *f.host_glob);
  // Stored timestamps share one fixed-width format, so text order is time order.
  if (f.since) add("ts >= ?", format_timestamp(*f.since));
  return w;
}

void bind_all(Statement& s, const Where& w, std::size_t limit) {
  int i = 1;
  for (const auto& p : w.params) s.bind(i++, p);
  // SQLite reads a negative LIMIT as "no limit".
  s.bind(i, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
}

detail::Db open_reader(const std::filesystem::path& db) { return detail::Db(open_for_reading(db)); }

std::runtime_error read_error(const std::filesystem::path& db, const std::exception& e) {
  return std::runtime_error("cannot read audit database " + db.string() + ": " + e.what());
}

}  // namespace

std::vector<AuditRecord> query_requests(const std::filesystem::path& db_path, const Filter& filter) {
  auto db = open_reader(db_path);
  const Where w = where_clause(filter);
  std::vector<AuditRecord> rows;
  try {
    Statement s(db.get(),
                "SELECT id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, "
                "reason, status, bytes_up, bytes_down, duration_ms, error, count FROM requests" +
                    w.sql + " ORDER BY ts DESC, id DESC LIMIT ?");
    bind_all(s, w, filter.limit);
    while (s.step()) {
      AuditRecord r;
      r.id = s.column_int(0);
      r.ts = detail::parse_iso8601(s.column_text(1)).value_or(Clock::time_point{});
      r.agent = s.column_text(2);
      r.client_addr = s.column_text(3);
      r.kind = s.column_text(4);
      r.method = s.column_text(5);
      r.host = s.column_text(6);
      r.port = static_cast<std::uint16_t>(s.column_int(7));
      r.path = s.column_text(8);
      r.resolved_addr = s.column_text(9);
      r.decision = s.column_text(10);
      r.rule = s.column_text(11);
      r.reason = s.column_text(12);
      if (!s.is_null(13)) r.status = static_cast<int>(s.column_int(13));
      r.bytes_up = static_cast<std::uint64_t>(s.column_int(14));
      r.bytes_down = static_cast<std::uint64_t>(s.column_int(15));
      if (!s.is_null(16)) r.duration_ms = s.column_int(16);
      r.error = s.column_text(17);
      r.count = static_cast<std::uint64_t>(s.column_int(18));
      rows.push_back(std::move(r));
    }
  } catch (const detail::SqliteError& e) {
    throw read_error(db_path, e);
  }
  return rows;
}

std::vector<SummaryRow> summarize(const std::filesystem::path& db_path, const Filter& filter) {
  auto db = open_reader(db_path);
  const Where w = where_clause(filter);
  std::vector<SummaryRow> rows;
  try {
    // The busiest agent/host pairs first; the limit keeps the top ones.
    Statement s(db.get(),
                "SELECT agent, host, SUM((decision = 'allow') * count), SUM((decision = 'deny') * count), "
                "SUM((decision = 'report') * count), SUM(bytes_up), SUM(bytes_down) FROM requests" +
                    w.sql + " GROUP BY agent, host ORDER BY SUM(count) DESC, agent, host LIMIT ?");
    bind_all(s, w, filter.limit);
    while (s.step()) {
      SummaryRow r;
      r.agent = s.column_text(0);
      r.host = s.column_text(1);
      r.allowed = static_cast<std::uint64_t>(s.column_int(2));
      r.denied = static_cast<std::uint64_t>(s.column_int(3));
      r.reported = static_cast<std::uint64_t>(s.column_int(4));
      r.bytes_up = static_cast<std::uint64_t>(s.column_int(5));
      r.bytes_down = static_cast<std::uint64_t>(s.column_int(6));
      rows.push_back(std::move(r));
    }
  } catch (const detail::SqliteError& e) {
    throw read_error(db_path, e);
  }
  return rows;
}

}  // namespace netbox::audit
