#pragma once
// The admin JSON API: read-only queries over the audit database.
#include "netbox/audit/record.hpp"
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

// The answers are JSON built from netbox::audit's readers (netbox/audit/query.hpp) over
// one audit::Filter made of the parameters agent, decision, host (a glob) and since; a
// NULL column is null. docs/audit.md ("The admin JSON API") has the shapes.
// /api/summary: totals by decision and bytes, the most denied hosts with their reasons,
// and the live counters.
std::string api_summary(const std::filesystem::path& db, const QueryParams& q, const LiveStats& live);
// /api/agents: one object per agent, the most recently seen first.
std::string api_agents(const std::filesystem::path& db, const QueryParams& q);
// /api/requests: rows, newest first; limit 100 by default, 1000 at most (0 asks for all: 1000).
std::string api_requests(const std::filesystem::path& db, const QueryParams& q);

// /api/timeline: requests per decision in buckets over the window `since` names (1h when
// absent), about 120 buckets of a round length; bucket_seconds says which.
std::string api_timeline(const std::filesystem::path& db, const QueryParams& q,
                         audit::Clock::time_point now = audit::Clock::now());

// /api/events: rows of `events`, newest first, as `netbox audit events --format json`
// prints them; parameters kind, since, limit (as /api/requests').
std::string api_events(const std::filesystem::path& db, const QueryParams& q);
// /api/launches: rows of `agents` (one per launch or registration), newest first, as
// `netbox audit agents --format json`; parameters agent, since (started), limit.
std::string api_launches(const std::filesystem::path& db, const QueryParams& q);

// Splits "a=1&b=x%20y" into decoded pairs.
QueryParams parse_query(std::string_view query);

}  // namespace netbox::dashboards
