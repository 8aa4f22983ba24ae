#pragma once
// Reading the audit store: filters for `netbox audit`, the summary, and exports.
#include "netbox/audit/record.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit {

struct Filter {
  std::optional<std::string> agent;
  std::optional<std::string> decision;     // allow | deny | report
  std::optional<std::string> host_glob;    // SQLite GLOB, e.g. "*.example.com"
  std::optional<Clock::time_point> since;
  std::size_t limit = 100;
};

// Parses "15m", "2h", "1d", "30s" (relative to now) or an ISO-8601 timestamp.
// Throws std::invalid_argument with a message naming the value.
Clock::time_point parse_since(std::string_view text, Clock::time_point now = Clock::now());
// A length of time: a whole number and one unit, 30s, 15m, 2h, 1d or 1w (at most a
// century). Throws std::invalid_argument saying what is wrong.
std::chrono::seconds parse_duration(std::string_view text);

std::vector<AuditRecord> query_requests(const std::filesystem::path& db, const Filter& filter);

struct SummaryRow {
  std::string agent;
  std::string host;
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t reported = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
};
std::vector<SummaryRow> summarize(const std::filesystem::path& db, const Filter& filter);

// Renders rows as "table", "json" or "csv". Throws std::invalid_argument for another format.
std::string format_requests(const std::vector<AuditRecord>& rows, std::string_view format);
std::string format_summary(const std::vector<SummaryRow>& rows, std::string_view format);

// ISO-8601 UTC with milliseconds, "2026-11-22T04:15:41.123Z".
std::string format_timestamp(Clock::time_point tp);

}  // namespace netbox::audit
