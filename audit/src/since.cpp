#include "netbox/audit/query.hpp"
#include "timestamp.hpp"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>

namespace netbox::audit {

namespace {

// The seconds of a count and one unit letter ("15m"), or why `text` is not one. Shared by
// --since (a time looking back) and the durations (--older-than, --audit-retention), each
// of which words its own message around the reason.
struct DurationParse {
  std::chrono::seconds seconds{0};
  std::string why;  // empty when it parsed
};

DurationParse duration_of(std::string_view text) {
  if (text.empty()) return {{}, "it is empty"};
  const char unit = text.back();
  const std::string_view number = text.substr(0, text.size() - 1);
  std::int64_t seconds_per_unit = 0;
  switch (unit) {
    case 's': seconds_per_unit = 1; break;
    case 'm': seconds_per_unit = 60; break;
    case 'h': seconds_per_unit = 3600; break;
    case 'd': seconds_per_unit = 86400; break;
    case 'w': seconds_per_unit = 7 * 86400; break;
    default: return {{}, "no unit s, m, h, d or w at the end"};
  }
  std::uint64_t count = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), count);
  if (number.empty() || ec == std::errc::invalid_argument || end != number.data() + number.size())
    return {{}, "expected a whole number before the unit"};
  // A century is longer than any audit store has existed; more is a typo.
  constexpr std::uint64_t kLongest = 100ULL * 366 * 86400;
  if (ec == std::errc::result_out_of_range || count > kLongest / static_cast<std::uint64_t>(seconds_per_unit))
    return {{}, "that is more than a century"};
  return {std::chrono::seconds(static_cast<std::int64_t>(count) * seconds_per_unit), {}};
}

}  // namespace

std::chrono::seconds parse_duration(std::string_view text) {
  const DurationParse d = duration_of(text);
  if (!d.why.empty())
    throw std::invalid_argument("'" + std::string(text) + "' is not a duration: " + d.why +
                                " (use 30s, 15m, 2h, 1d or 1w)");
  return d.seconds;
}

Clock::time_point parse_since(std::string_view text, Clock::time_point now) {
  if (auto tp = detail::parse_iso8601(text)) return *tp;
  const DurationParse d = duration_of(text);
  if (d.why.empty()) return now - d.seconds;
  const std::string why = d.why.starts_with("no unit") ? d.why + ", and not an ISO-8601 timestamp" : d.why;
  throw std::invalid_argument("'" + std::string(text) + "' is not a time: " + why +
                              " (use 30s, 15m, 2h, 1d, 1w or a timestamp like 2026-11-22T04:15:00Z)");
}

}  // namespace netbox::audit
