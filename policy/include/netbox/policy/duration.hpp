#pragma once
// The one grammar of lengths of time in netbox, shared by every flag that takes one
// (launch --timeout, --kill-grace, --rlimit-cpu; proxy --audit-retention,
// --audit-shutdown-wait; audit --since, prune --older-than), their config-file keys
// (proxy.json, launch.json) and the policy's limits, so each accepts exactly the same text.
//
//   DURATION := PART+ | NUMBER        a bare NUMBER is seconds ("90", "0.5")
//   PART     := NUMBER UNIT           "1h30m", "2m30s", "1.5h", "500ms"
//   UNIT     := ms | s | m | h | d | w
//
// Units in any order and each at most once, no sign, no spaces; at most a century.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::policy {

struct DurationParse {
  std::chrono::milliseconds value{0};
  std::string why;  // empty when it parsed; else why not ("no unit after 5x")
  explicit operator bool() const { return why.empty(); }
};

// What a NUMBER without a unit means: seconds, or a mistake where a slip would destroy
// something (audit prune --older-than 30, meant as 30d, would remove almost every row).
enum class BareNumber { seconds, refused };

// Truncated to whole milliseconds.
DurationParse try_parse_duration(std::string_view text, BareNumber bare = BareNumber::seconds);

// What every message about a bad duration ends with.
inline constexpr std::string_view kDurationExamples = "use 90 (seconds), 500ms, 30s, 15m, 1h30m, 2d or 1w";

// Throws std::invalid_argument: "'5x' is not a duration: WHY (use ...)".
std::chrono::milliseconds parse_duration(std::string_view text, BareNumber bare = BareNumber::seconds);

}  // namespace netbox::policy
