#include "reader.hpp"

#include "netbox/audit/schema.hpp"
#include "timestamp.hpp"

namespace netbox::audit::detail {

void Where::add(std::string_view condition, std::string value) {
  sql += sql.empty() ? " WHERE " : " AND ";
  sql += condition;
  params.push_back(std::move(value));
}

Where where_clause(const Filter& f) {
  Where w;
  if (f.agent) w.add("agent = ?", *f.agent);
  if (f.decision) w.add("decision = ?", *f.decision);
  if (f.host_glob) w.add("host GLOB ?", *f.host_glob);
  // Stored timestamps share one fixed-width format, so text order is time order.
  if (f.since) w.add("ts >= ?", format_timestamp(*f.since));
  return w;
}

Reader::Reader(const std::filesystem::path& db) : path_(db), db_(open_for_reading(db)) {}

std::runtime_error Reader::read_error(const std::exception& e) const {
  return std::runtime_error("cannot read audit database " + path_.string() + ": " + e.what());
}

Clock::time_point stored_time(const std::string& text) { return parse_iso8601(text).value_or(Clock::time_point{}); }

}  // namespace netbox::audit::detail
