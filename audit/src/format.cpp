#include "netbox/audit/query.hpp"
#include "netbox/audit/printable.hpp"

#include "csv.hpp"
#include "text_table.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace netbox::audit {
namespace {

using nlohmann::ordered_json;

enum class Format { table, json, csv };

Format parse_format(std::string_view format) {
  if (format == "table") return Format::table;
  if (format == "json") return Format::json;
  if (format == "csv") return Format::csv;
  throw std::invalid_argument("unknown format '" + std::string(format) + "': use table, json or csv");
}

std::string optional_number(const auto& value) { return value ? std::to_string(*value) : std::string(); }

// Every column, in the table's order: the shape of json objects and csv records.
const std::vector<std::string> kRequestColumns = {
    "id",   "ts",       "agent", "client_addr", "kind",     "method",     "host",        "port",  "path",
    "resolved_addr", "decision", "rule",  "reason",      "status", "bytes_up", "bytes_down", "duration_ms", "error",
    "count", "client_pid", "client_exe", "client_argv"};

std::vector<std::string> request_fields(const AuditRecord& r) {
  return {std::to_string(r.id), format_timestamp(r.ts), r.agent,  r.client_addr,
          r.kind,               r.method,               r.host,   std::to_string(r.port),
          r.path,               r.resolved_addr,        r.decision, r.rule,
          r.reason,             optional_number(r.status), std::to_string(r.bytes_up), std::to_string(r.bytes_down),
          optional_number(r.duration_ms), r.error, std::to_string(r.count), optional_number(r.origin.pid),
          r.origin.exe, r.origin.argv};
}

// The nullable TEXT columns: the writer stores an empty value as NULL, and JSON says null.
ordered_json text_or_null(const std::string& value) { return value.empty() ? ordered_json(nullptr) : ordered_json(value); }

ordered_json request_json(const AuditRecord& r) {
  ordered_json o;
  o["id"] = r.id;
  o["ts"] = format_timestamp(r.ts);
  o["agent"] = r.agent;
  o["client_addr"] = text_or_null(r.client_addr);
  o["kind"] = r.kind;
  o["method"] = text_or_null(r.method);
  o["host"] = r.host;
  o["port"] = r.port;
  o["path"] = text_or_null(r.path);
  o["resolved_addr"] = text_or_null(r.resolved_addr);
  o["decision"] = r.decision;
  o["rule"] = text_or_null(r.rule);
  o["reason"] = text_or_null(r.reason);
  o["status"] = r.status ? ordered_json(*r.status) : ordered_json(nullptr);
  o["bytes_up"] = r.bytes_up;
  o["bytes_down"] = r.bytes_down;
  o["duration_ms"] = r.duration_ms ? ordered_json(*r.duration_ms) : ordered_json(nullptr);
  o["error"] = text_or_null(r.error);
  o["count"] = r.count;  // requests this row stands for (refusals folded into one row)
  // A request inside an inspected TLS tunnel: the tunnel's row id.
  o["parent_id"] = r.parent_id ? ordered_json(r.parent_id) : ordered_json(nullptr);
  // The proxy that wrote the row (several may share a store); null for rows before schema 7.
  o["proxy_id"] = text_or_null(r.proxy_id);
  // Who opened the connection (schema 10): the process's pid inside the sandbox, its
  // executable, and its command line's first words (the process's own claim).
  o["client_pid"] = r.origin.pid ? ordered_json(*r.origin.pid) : ordered_json(nullptr);
  o["client_exe"] = text_or_null(r.origin.exe);
  o["client_argv"] = text_or_null(r.origin.argv);
  return o;
}

// Bytes an agent sent are not guaranteed UTF-8; replace rather than fail the whole export.
// The serializer escapes U+0000-U+001F; DEL, C1 and bidirectional controls it leaves raw,
// and a terminal would act on them, so they become \u escapes too (same values once parsed).
std::string dump(const ordered_json& j) {
  return escape_controls_in_json(j.dump(2, ' ', false, ordered_json::error_handler_t::replace)) + "\n";
}

std::string requests_table(const std::vector<AuditRecord>& rows) {
  if (rows.empty()) return "no matching requests\n";
  const std::vector<detail::Column> columns = {
      {"ID", 10, true},    {"TIME", 24},    {"AGENT", 16},     {"DECISION", 8},  {"KIND", 7},
      {"METHOD", 7},       {"HOST", 40},    {"PORT", 5, true}, {"PATH", 32},     {"STATUS", 6, true},
      {"UP", 12, true},    {"DOWN", 12, true}, {"MS", 9, true}, {"COUNT", 7, true}, {"REASON", 80}};
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    // One column for what a reader asks first: why it was decided so, or what went wrong.
    std::string note = r.reason;
    if (!r.error.empty()) note += (note.empty() ? "error: " : "; error: ") + r.error;
    cells.push_back({std::to_string(r.id), format_timestamp(r.ts), r.agent, r.decision, r.kind, r.method, r.host,
                     std::to_string(r.port), r.path, optional_number(r.status), std::to_string(r.bytes_up),
                     std::to_string(r.bytes_down), optional_number(r.duration_ms), std::to_string(r.count), note});
  }
  return detail::render_table(columns, cells);
}

const std::vector<std::string> kSummaryColumns = {"agent", "host", "allowed", "denied", "reported", "capped", "failed",
                                                  "bytes_up", "bytes_down"};

std::vector<std::string> summary_fields(const SummaryRow& r) {
  return {r.agent,
          r.host,
          std::to_string(r.allowed),
          std::to_string(r.denied),
          std::to_string(r.reported),
          std::to_string(r.capped),
          std::to_string(r.failed),
          std::to_string(r.bytes_up),
          std::to_string(r.bytes_down)};
}

}  // namespace

std::string format_requests(const std::vector<AuditRecord>& rows, std::string_view format) {
  switch (parse_format(format)) {
    case Format::table:
      return requests_table(rows);
    case Format::json: {
      auto array = ordered_json::array();
      for (const auto& r : rows) array.push_back(request_json(r));
      return dump(array);
    }
    case Format::csv: {
      std::string out = detail::csv_record(kRequestColumns);
      for (const auto& r : rows) out += detail::csv_record(request_fields(r));
      return out;
    }
  }
  return {};
}

std::string format_summary(const std::vector<SummaryRow>& rows, std::string_view format) {
  switch (parse_format(format)) {
    case Format::table: {
      if (rows.empty()) return "no matching requests\n";
      const std::vector<detail::Column> columns = {{"AGENT", 24},           {"HOST", 48},
                                                   {"ALLOWED", 12, true},   {"DENIED", 12, true},
                                                   {"REPORTED", 12, true},  {"CAPPED", 12, true},
                                                   {"FAILED", 12, true},    {"UP", 14, true},
                                                   {"DOWN", 14, true}};
      std::vector<std::vector<std::string>> cells;
      for (const auto& r : rows) cells.push_back(summary_fields(r));
      return detail::render_table(columns, cells);
    }
    case Format::json: {
      auto array = ordered_json::array();
      for (const auto& r : rows) {
        ordered_json o;
        o["agent"] = r.agent;
        o["host"] = r.host;
        o["allowed"] = r.allowed;
        o["denied"] = r.denied;
        o["reported"] = r.reported;
        o["capped"] = r.capped;
        o["failed"] = r.failed;
        o["bytes_up"] = r.bytes_up;
        o["bytes_down"] = r.bytes_down;
        array.push_back(std::move(o));
      }
      return dump(array);
    }
    case Format::csv: {
      std::string out = detail::csv_record(kSummaryColumns);
      for (const auto& r : rows) out += detail::csv_record(summary_fields(r));
      return out;
    }
  }
  return {};
}

}  // namespace netbox::audit
