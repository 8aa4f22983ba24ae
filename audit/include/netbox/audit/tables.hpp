#pragma once
// `netbox audit events` and `netbox audit agents`: the store's other two tables, read
// with the same kind of filters as requests and printed as table, json or csv with one
// set of columns (json objects and csv records have the same keys, in the same order).
#include "netbox/audit/record.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit {

struct TableFilter {
  std::optional<std::string> kind;    // events: this kind (exfiltration_attempt, policy_reload_failed ...)
  std::optional<std::string> agent;   // agents: this name
  std::optional<Clock::time_point> since;  // events: ts; agents: started
  bool running = false;               // agents: only those with no end recorded
  std::size_t limit = 100;            // newest first; 0: no limit
};

// One row of either table, in its columns' order; nullopt is NULL.
using TableRow = std::vector<std::optional<std::string>>;

std::vector<TableRow> query_events(const std::filesystem::path& db, const TableFilter& filter);
std::vector<TableRow> query_agents(const std::filesystem::path& db, const TableFilter& filter);

// `format`: table, json or csv (std::invalid_argument otherwise).
std::string format_events(const std::vector<TableRow>& rows, std::string_view format);
std::string format_agents(const std::vector<TableRow>& rows, std::string_view format);
// `netbox agent list`: the agents running now, as launches and proxies answer them
// (where, name, profile, pid, state, started, denied), with the same formats.
std::string format_running_agents(const std::vector<TableRow>& rows, std::string_view format);

}  // namespace netbox::audit
