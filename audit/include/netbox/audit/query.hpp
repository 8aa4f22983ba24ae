#pragma once
// Reading the audit store: the rows `netbox audit` lists, its summary, and the totals the
// dashboard shows. Every reader here takes one Filter, so the CLI and the admin API select
// rows the same way. Text that is NULL in the store is an empty string in these values.
#include "netbox/audit/record.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit {

struct Filter {
  std::optional<std::string> agent;
  std::optional<std::string> decision;     // one of the values parse_decision accepts
  std::optional<std::string> host_glob;    // SQLite GLOB, e.g. "*.example.com"
  // The executable that opened the connection (client_exe): a path, or a name (no '/')
  // that matches that file name in any folder.
  std::optional<std::string> exe;
  std::optional<Clock::time_point> since;
  std::size_t limit = 100;                 // 0: no limit
};

// Parses "15m", "2h", "1d", "30s" (relative to now) or an ISO-8601 timestamp.
// Throws std::invalid_argument with a message naming the value.
Clock::time_point parse_since(std::string_view text, Clock::time_point now = Clock::now());
// A length of time: a whole number and one unit, 30s, 15m, 2h, 1d or 1w (at most a
// century). Throws std::invalid_argument saying what is wrong.
std::chrono::seconds parse_duration(std::string_view text);
// A decision a filter may name (allow, deny, report). Throws std::invalid_argument naming
// the value and the choices.
std::string parse_decision(std::string_view text);

std::vector<AuditRecord> query_requests(const std::filesystem::path& db, const Filter& filter);

struct SummaryRow {
  std::string agent;
  std::string host;
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t reported = 0;
  std::uint64_t capped = 0;   // refused by a connection limit
  std::uint64_t failed = 0;   // decision error: malformed, DNS or upstream failure
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
};
std::vector<SummaryRow> summarize(const std::filesystem::path& db, const Filter& filter);

// Requests with one decision. A row into which the writer folded refusals counts as the
// requests it stands for, here and in every aggregate below.
struct DecisionCount {
  std::string decision;
  std::uint64_t requests = 0;
};
// The decisions that occur, in name order (one with no request is absent): a list, not a
// field per decision, so a decision added to the store needs no change here.
using DecisionCounts = std::vector<DecisionCount>;
std::uint64_t count_of(const DecisionCounts& counts, std::string_view decision);

struct Totals {
  DecisionCounts decisions;
  std::uint64_t requests = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
};
// Every request matching the filter (its limit does not apply).
Totals totals(const std::filesystem::path& db, const Filter& filter);

struct DenialReason {
  std::string reason;
  std::string rule;               // the rule of the latest denial with this reason
  std::uint64_t requests = 0;
  Clock::time_point last_seen{};
};
struct DeniedHost {
  std::string host;
  std::uint64_t requests = 0;
  std::vector<DenialReason> reasons;  // most frequent first, at most kReasonsPerDeniedHost
};
inline constexpr std::size_t kReasonsPerDeniedHost = 5;
// The hosts with the most denied requests among those matching the filter, whatever
// decision it names; `limit` hosts (0: all), most denied first.
std::vector<DeniedHost> top_denied(const std::filesystem::path& db, const Filter& filter);

struct AgentActivity {
  std::string agent;
  DecisionCounts decisions;
  std::uint64_t requests = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  Clock::time_point last_seen{};
};
// One entry per agent with requests matching the filter, the most recently seen first;
// `limit` agents (0: all).
std::vector<AgentActivity> agent_activity(const std::filesystem::path& db, const Filter& filter);

// Requests matching the filter counted per decision in consecutive buckets of `bucket`
// (aligned to the epoch, so two calls agree), oldest first; a bucket without a request is
// absent. What the dashboard's chart draws for a window that began before the page opened.
struct TimelinePoint {
  Clock::time_point start;
  DecisionCounts decisions;
};
std::vector<TimelinePoint> timeline(const std::filesystem::path& db, const Filter& filter, std::chrono::seconds bucket);

// Renders rows as "table", "json" or "csv". Throws std::invalid_argument for another format.
// In json a NULL column (for text: an empty one) is null.
std::string format_requests(const std::vector<AuditRecord>& rows, std::string_view format);
std::string format_summary(const std::vector<SummaryRow>& rows, std::string_view format);

// ISO-8601 UTC with milliseconds, "2026-11-22T04:15:41.123Z".
std::string format_timestamp(Clock::time_point tp);

// The same text in a buffer of its own, for the request path (every audit row and log
// line has one): a value, no allocation. format_timestamp is this, copied into a string.
class TimestampText {
 public:
  explicit TimestampText(Clock::time_point tp);
  std::string_view view() const { return {text_, size_}; }

 private:
  char text_[40];  // 24 characters up to year 9999; room for any year gmtime can name
  std::size_t size_ = 0;
};

}  // namespace netbox::audit
