#include "netbox/audit/query.hpp"
#include "timestamp.hpp"

#include "netbox/policy/duration.hpp"

#include <stdexcept>
#include <string>

namespace netbox::audit {

namespace {

// The seconds of a duration ("15m", "1h30m"), or why `text` is not one. Shared by
// --since (a time looking back) and the durations (--older-than, --audit-retention), each
// of which words its own message around the reason.
struct DurationParse {
  std::chrono::seconds seconds{0};
  std::string why;  // empty when it parsed
};

DurationParse duration_of(std::string_view text, policy::BareNumber bare) {
  // The one grammar of durations (policy/duration.hpp), the same as every other flag's.
  const auto d = policy::try_parse_duration(text, bare);
  if (!d) return {{}, d.why};
  return {std::chrono::duration_cast<std::chrono::seconds>(d.value), {}};
}

}  // namespace

std::chrono::seconds parse_duration(std::string_view text) {
  // What goes is older than this: "30" meant as 30d must not remove everything.
  const DurationParse d = duration_of(text, policy::BareNumber::refused);
  if (!d.why.empty())
    throw std::invalid_argument("'" + std::string(text) + "' is not a duration: " + d.why +
                                " (" + std::string(policy::kDurationExamples) + ")");
  return d.seconds;
}

Clock::time_point parse_since(std::string_view text, Clock::time_point now) {
  if (auto tp = detail::parse_iso8601(text)) return *tp;
  const DurationParse d = duration_of(text, policy::BareNumber::seconds);
  if (d.why.empty()) return now - d.seconds;
  throw std::invalid_argument("'" + std::string(text) + "' is not a time: " + d.why +
                              ", and not an ISO-8601 timestamp (use 30s, 15m, 1h30m, 2d, 1w or a timestamp like "
                              "2026-11-22T04:15:00Z)");
}

}  // namespace netbox::audit
