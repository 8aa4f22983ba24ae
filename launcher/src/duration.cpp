#include "netbox/launcher/duration.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace netbox::launcher {

std::optional<double> parse_seconds(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  double scale = 1;
  std::string_view number = text;
  for (const auto& [unit, seconds] : kUnits) {
    if (text.size() > unit.size() && text.ends_with(unit)) {
      // "5ms" ends in "s" too: the longest unit is tried first.
      number = text.substr(0, text.size() - unit.size());
      scale = seconds;
      break;
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  const double seconds = value * scale;
  if (!std::isfinite(seconds) || seconds < 0) return std::nullopt;
  return seconds;
}

}  // namespace netbox::launcher
