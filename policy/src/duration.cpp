#include "netbox/policy/duration.hpp"

#include <array>
#include <cmath>
#include <stdexcept>

namespace netbox::policy {
namespace {

struct Unit {
  std::string_view name;
  double ms;
};
// Longest name first: "5ms" must not read as 5m and a stray "s".
constexpr std::array<Unit, 6> kUnits{{{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}, {"d", 86400e3},
                                      {"w", 7 * 86400e3}}};
constexpr double kLongestMs = 100.0 * 366 * 86400e3;  // more than a century is a typo

bool digit(char c) { return c >= '0' && c <= '9'; }

// A NUMBER at `text[at]`: digits, optionally a '.' and more digits. Advances `at`.
std::optional<double> number_at(std::string_view text, std::size_t& at) {
  const std::size_t start = at;
  while (at < text.size() && digit(text[at])) ++at;
  const std::size_t whole = at - start;
  std::size_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && digit(text[at])) ++at, ++fraction;
  }
  if (whole == 0 && fraction == 0) return std::nullopt;
  if (whole + fraction > 18) return std::nullopt;
  double value = 0;
  for (std::size_t i = start; i < at; ++i)
    if (text[i] != '.') value = value * 10 + (text[i] - '0');
  return value / std::pow(10.0, static_cast<double>(fraction));
}

}  // namespace

DurationParse try_parse_duration(std::string_view text, BareNumber bare) {
  if (text.empty()) return {{}, "it is empty"};
  std::size_t at = 0;
  double total = 0;
  unsigned seen = 0;  // one bit per unit: "1h2h" is a typo
  while (at < text.size()) {
    const std::size_t start = at;
    const auto n = number_at(text, at);
    if (!n) {
      if (text[start] == '-') return {{}, "it is negative"};
      return {{}, "expected a number at '" + std::string(text.substr(start)) + "'"};
    }
    if (at == text.size()) {
      if (start != 0) return {{}, "no unit after " + std::string(text.substr(start))};
      if (bare == BareNumber::refused)
        return {{}, "a number without a unit is refused here (write " + std::string(text) + "s or " +
                        std::string(text) + "d)"};
      total = *n * 1e3;  // a bare number is seconds
      break;
    }
    const Unit* unit = nullptr;
    for (const auto& u : kUnits)
      if (text.substr(at).starts_with(u.name) &&
          (at + u.name.size() == text.size() || digit(text[at + u.name.size()]) || text[at + u.name.size()] == '.')) {
        unit = &u;
        break;
      }
    if (unit == nullptr) return {{}, "unknown unit at '" + std::string(text.substr(at)) + "' (ms, s, m, h, d or w)"};
    const unsigned bit = 1U << static_cast<unsigned>(unit - kUnits.data());
    if (seen & bit) return {{}, "the unit " + std::string(unit->name) + " is given twice"};
    seen |= bit;
    total += *n * unit->ms;
    at += unit->name.size();
  }
  if (!std::isfinite(total) || total > kLongestMs) return {{}, "that is more than a century"};
  return {std::chrono::milliseconds(static_cast<long long>(total)), {}};
}

std::chrono::milliseconds parse_duration(std::string_view text, BareNumber bare) {
  const DurationParse d = try_parse_duration(text, bare);
  if (!d) throw std::invalid_argument("'" + std::string(text) + "' is not a duration: " + d.why + " (" +
                                      std::string(kDurationExamples) + ")");
  return d.value;
}

}  // namespace netbox::policy
