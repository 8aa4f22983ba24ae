#pragma once
// The admin JSON API: read-only queries over the audit database.
#include "netbox/dashboards/admin_server.hpp"

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace netbox::dashboards {

using QueryParams = std::map<std::string, std::string>;

// A bad query parameter: answered with 400 and this message (naming the parameter).
struct BadParameter : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// /api/summary: totals by decision and bytes in the window, top denied hosts with
// their latest reason, and the live counters.
std::string api_summary(const std::filesystem::path& db, const QueryParams& q, const LiveStats& live);
// /api/agents: one object per agent: requests, allowed, denied, reported, bytes, last_seen.
std::string api_agents(const std::filesystem::path& db, const QueryParams& q);
// /api/requests: rows, newest first (limit 100 by default, 1000 at most).
std::string api_requests(const std::filesystem::path& db, const QueryParams& q);

// Splits "a=1&b=x%20y" into decoded pairs.
QueryParams parse_query(std::string_view query);

}  // namespace netbox::dashboards
