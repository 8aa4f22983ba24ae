#include "netbox/audit/query.hpp"

#include "netbox/audit/decision.hpp"
#include "reader.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace netbox::audit {
namespace {


}  // namespace

std::string parse_decision(std::string_view text) {
  std::string choices;
  for (const auto d : kDecisions) {
    if (text == d) return std::string(d);
    choices += (choices.empty() ? "" : ", ") + std::string(d);
  }
  throw std::invalid_argument("'" + std::string(text) + "' is not one of " + choices);
}

std::vector<AuditRecord> query_requests(const std::filesystem::path& db, const Filter& filter) {
  detail::Reader reader(db);
  const auto where = reader.where(filter);
  std::vector<AuditRecord> rows;
  reader.each(
      "SELECT id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, "
      "reason, status, bytes_up, bytes_down, duration_ms, error, count, parent_id, proxy_id, client_pid, "
      "client_exe, client_argv FROM requests",
      where, " ORDER BY ts DESC, id DESC", filter.limit, [&rows](const detail::Row& s) {
        AuditRecord r;
        r.id = s.column_int(0);
        r.ts = detail::stored_time(s.column_text(1));
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
        if (!s.is_null(19)) r.parent_id = s.column_int(19);
        r.proxy_id = s.column_text(20);
        if (!s.is_null(21)) r.origin.pid = s.column_int(21);
        r.origin.exe = s.column_text(22);
        r.origin.argv = s.column_text(23);
        rows.push_back(std::move(r));
      });
  return rows;
}

std::vector<SummaryRow> summarize(const std::filesystem::path& db, const Filter& filter) {
  detail::Reader reader(db);
  const auto where = reader.where(filter);
  std::vector<SummaryRow> rows;
  // The busiest agent/host pairs first; the limit keeps the top ones.
  reader.each(
      "SELECT agent, host, SUM(CASE WHEN decision = 'allow' THEN count ELSE 0 END), "
      "SUM(CASE WHEN decision = 'deny' THEN count ELSE 0 END), SUM(CASE WHEN decision = 'report' THEN count ELSE 0 END), "
      "SUM(CASE WHEN decision = 'cap' THEN count ELSE 0 END), SUM(CASE WHEN decision = 'error' THEN count ELSE 0 END), "
      "SUM(bytes_up), SUM(bytes_down) FROM requests",
      where, " GROUP BY agent, host ORDER BY SUM(count) DESC, agent, host", filter.limit, [&rows](const detail::Row& s) {
        SummaryRow r;
        r.agent = s.column_text(0);
        r.host = s.column_text(1);
        r.allowed = static_cast<std::uint64_t>(s.column_int(2));
        r.denied = static_cast<std::uint64_t>(s.column_int(3));
        r.reported = static_cast<std::uint64_t>(s.column_int(4));
        r.capped = static_cast<std::uint64_t>(s.column_int(5));
        r.failed = static_cast<std::uint64_t>(s.column_int(6));
        r.bytes_up = static_cast<std::uint64_t>(s.column_int(7));
        r.bytes_down = static_cast<std::uint64_t>(s.column_int(8));
        rows.push_back(std::move(r));
      });
  return rows;
}

}  // namespace netbox::audit
