#include "netbox/audit/tables.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/audit/query.hpp"

#include "csv.hpp"
#include "reader.hpp"
#include "text_table.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace netbox::audit {
namespace {

using nlohmann::ordered_json;

struct TableColumn {
  std::string name;            // json key and csv header
  std::string title;           // table header
  std::size_t width;
  bool number = false;         // json: a number
  bool in_table = true;        // the terminal's table leaves long JSON out
};

const std::vector<TableColumn> kEventColumns = {
    {"id", "ID", 10, true},       {"ts", "TIME", 24},         {"kind", "KIND", 24},
    {"count", "COUNT", 7, true},  {"message", "MESSAGE", 80}, {"detail", "DETAIL", 60, false, false},
    {"proxy_id", "PROXY", 16, false, false}};

// mode: the launch's --mode, from the sandbox JSON the launcher recorded (NULL: not a launch,
// or one before the mode was recorded).
const std::vector<TableColumn> kAgentColumns = {
    {"id", "ID", 8, true},
    {"name", "NAME", 24},
    {"pid", "PID", 8, true},
    {"mode", "MODE", 7},
    {"started", "STARTED", 24},
    {"ended", "ENDED", 24},
    {"exit_status", "EXIT", 5, true},
    {"end_reason", "END", 40},
    {"address", "ADDRESS", 16},
    {"command_line", "COMMAND", 48},
    {"policy_digest", "POLICY", 16},
    {"resource_usage", "USAGE", 40, false, false},
    {"proxy_id", "PROXY", 16, false, false}};

const std::vector<TableColumn> kRunningColumns = {
    {"name", "NAME", 24},  {"profile", "PROFILE", 12}, {"pid", "PID", 8, true},       {"state", "STATE", 8},
    {"started", "STARTED", 24}, {"denied", "DENIED", 7, true}, {"via", "VIA", 40}};

std::optional<std::string> cell(const detail::Row& s, int i) {
  if (s.is_null(i)) return std::nullopt;
  return s.column_text(i);
}

std::string dump(const ordered_json& j) {
  return escape_controls_in_json(j.dump(2, ' ', false, ordered_json::error_handler_t::replace)) + "\n";
}

std::string render(const std::vector<TableColumn>& columns, const std::vector<TableRow>& rows, std::string_view format,
                   const char* none) {
  if (format == "table" || format == "text") {
    if (rows.empty()) return std::string(none) + "\n";
    std::vector<detail::Column> shown;
    for (const auto& c : columns)
      if (c.in_table) shown.push_back({c.title, c.width, c.number});
    std::vector<std::vector<std::string>> cells;
    for (const auto& r : rows) {
      cells.emplace_back();
      for (std::size_t i = 0; i < columns.size(); ++i)
        if (columns[i].in_table) cells.back().push_back(r[i].value_or(""));
    }
    return detail::render_table(shown, cells);
  }
  if (format == "json") {
    auto array = ordered_json::array();
    for (const auto& r : rows) {
      ordered_json o = ordered_json::object();
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (!r[i]) o[columns[i].name] = nullptr;
        else if (columns[i].number) o[columns[i].name] = std::stoll(*r[i]);
        else o[columns[i].name] = *r[i];
      }
      array.push_back(std::move(o));
    }
    return dump(array);
  }
  if (format == "csv") {
    std::vector<std::string> header;
    for (const auto& c : columns) header.push_back(c.name);
    std::string out = detail::csv_record(header);
    for (const auto& r : rows) {
      std::vector<std::string> fields;
      for (const auto& v : r) fields.push_back(v.value_or(""));
      out += detail::csv_record(fields);
    }
    return out;
  }
  throw std::invalid_argument("unknown format '" + std::string(format) + "': use table, json or csv");
}

std::optional<std::string> mode_of(const std::optional<std::string>& sandbox) {
  if (!sandbox) return std::nullopt;
  const auto j = nlohmann::json::parse(*sandbox, nullptr, false);
  if (!j.is_object() || !j.contains("mode") || !j["mode"].is_string()) return std::nullopt;
  return j["mode"].get<std::string>();
}

// Why an agent's row ended, from its resource usage: `netbox gc` records
// {"ended_by":"gc",...} for a launcher that died; a launch's own end has none.
std::optional<std::string> end_reason(const std::optional<std::string>& ended, const std::optional<std::string>& usage) {
  if (!ended) return std::nullopt;
  if (usage) {
    const auto j = nlohmann::json::parse(*usage, nullptr, false);
    if (j.is_object() && j.contains("ended_by") && j["ended_by"].is_string())
      return j.value("reason", j["ended_by"].get<std::string>());
  }
  return std::string("exited");
}

}  // namespace

std::vector<TableRow> query_events(const std::filesystem::path& db, const TableFilter& f) {
  detail::Reader reader(db);
  detail::Where w;
  if (f.kind) w.add("kind = ?", *f.kind);
  if (f.since) w.add("ts >= ?", format_timestamp(*f.since));
  std::vector<TableRow> rows;
  reader.each("SELECT id, ts, kind, count, message, detail, proxy_id FROM events", w, " ORDER BY ts DESC, id DESC",
              f.limit, [&rows](const detail::Row& s) {
                rows.push_back({cell(s, 0), cell(s, 1), cell(s, 2), cell(s, 3), cell(s, 4), cell(s, 5), cell(s, 6)});
              });
  return rows;
}

std::vector<TableRow> query_agents(const std::filesystem::path& db, const TableFilter& f) {
  detail::Reader reader(db);
  detail::Where w;
  if (f.agent) w.add("name = ?", *f.agent);
  if (f.since) w.add("started >= ?", format_timestamp(*f.since));
  if (f.running) w.add("ended IS NULL AND ? = '1'", "1");
  std::vector<TableRow> rows;
  reader.each("SELECT id, name, pid, sandbox, started, ended, exit_status, resource_usage, address, command_line, "
              "policy_digest, proxy_id FROM agents",
              w, " ORDER BY started DESC, id DESC", f.limit, [&rows](const detail::Row& s) {
                rows.push_back({cell(s, 0), cell(s, 1), cell(s, 2), mode_of(cell(s, 3)), cell(s, 4), cell(s, 5),
                                cell(s, 6), end_reason(cell(s, 5), cell(s, 7)), cell(s, 8), cell(s, 9), cell(s, 10),
                                cell(s, 7), cell(s, 11)});
              });
  return rows;
}

std::string format_events(const std::vector<TableRow>& rows, std::string_view format) {
  return render(kEventColumns, rows, format, "no matching events");
}

std::string format_running_agents(const std::vector<TableRow>& rows, std::string_view format) {
  return render(kRunningColumns, rows, format, "no agent is running (no launch answers, and no proxy has one attached)");
}

std::string format_agents(const std::vector<TableRow>& rows, std::string_view format) {
  return render(kAgentColumns, rows, format, "no matching agents");
}

}  // namespace netbox::audit
