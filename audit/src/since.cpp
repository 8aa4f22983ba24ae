#include "netbox/audit/query.hpp"
#include "timestamp.hpp"

#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>

namespace netbox::audit {

std::chrono::seconds parse_duration(std::string_view text) {
  const auto bad = [&text](const std::string& why) {
    return std::invalid_argument("'" + std::string(text) + "' is not a duration: " + why + " (use 30s, 15m, 2h, 1d or 1w)");
  };
  if (text.empty()) throw bad("it is empty");
  // A count and one unit letter.
  const char unit = text.back();
  const std::string_view number = text.substr(0, text.size() - 1);
  std::int64_t seconds_per_unit = 0;
  switch (unit) {
    case 's': seconds_per_unit = 1; break;
    case 'm': seconds_per_unit = 60; break;
    case 'h': seconds_per_unit = 3600; break;
    case 'd': seconds_per_unit = 86400; break;
    case 'w': seconds_per_unit = 7 * 86400; break;
    default: throw bad("no unit s, m, h, d or w at the end");
  }
  std::uint64_t count = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), count);
  if (number.empty() || ec == std::errc::invalid_argument || end != number.data() + number.size())
    throw bad("expected a whole number before the unit");
  // A century is already longer than any audit store has existed; more is a typo.
  constexpr std::uint64_t kLongest = 100ULL * 366 * 86400;
  if (ec == std::errc::result_out_of_range || count > kLongest / static_cast<std::uint64_t>(seconds_per_unit))
    throw bad("that is too long");
  return std::chrono::seconds(static_cast<std::int64_t>(count) * seconds_per_unit);
}

Clock::time_point parse_since(std::string_view text, Clock::time_point now) {
  if (text.empty())
    throw std::invalid_argument("'' is not a time: it is empty (use 30s, 15m, 2h, 1d, 1w or a timestamp like "
                                "2026-11-22T04:15:00Z)");
  if (auto tp = detail::parse_iso8601(text)) return *tp;
  try {
    return now - parse_duration(text);
  } catch (const std::invalid_argument& e) {
    // Said as a time: a timestamp would have done too.
    std::string why = e.what();
    why.replace(why.find("is not a duration"), 17, "is not a time");
    why.replace(why.rfind(" (use "), std::string::npos,
                " (use 30s, 15m, 2h, 1d, 1w or a timestamp like 2026-11-22T04:15:00Z)");
    throw std::invalid_argument(why);
  }
}

}  // namespace netbox::audit
