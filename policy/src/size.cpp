#include "netbox/policy/size.hpp"

#include <cctype>
#include <charconv>
#include <limits>
#include <string_view>

namespace netbox::policy {
namespace {

constexpr std::uint64_t kGiB = 1024ULL * 1024 * 1024;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<std::uint64_t> parse_number(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  unsigned long long v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || ptr != digits.data() + digits.size()) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

}  // namespace

std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::string s = lower(text);
  if (s == "unlimited") return kUnlimited;
  // Accept "4G", "4g", "4GB", "4GiB" (all binary).
  if (s.size() > 2 && s.ends_with("ib") && !std::isdigit(static_cast<unsigned char>(s[s.size() - 3])))
    s.resize(s.size() - 2);
  else if (s.size() > 1 && s.ends_with('b') && !std::isdigit(static_cast<unsigned char>(s[s.size() - 2])))
    s.pop_back();
  std::uint64_t unit = 1;
  if (!s.empty() && !std::isdigit(static_cast<unsigned char>(s.back()))) {
    switch (s.back()) {
      case 'k': unit = 1024ULL; break;
      case 'm': unit = 1024ULL * 1024; break;
      case 'g': unit = kGiB; break;
      case 't': unit = kGiB * 1024; break;
      default: return std::nullopt;
    }
    s.pop_back();
  }
  auto n = parse_number(s);
  if (!n) return std::nullopt;
  if (*n > std::numeric_limits<std::uint64_t>::max() / unit) return std::nullopt;
  return *n * unit;
}

std::optional<std::uint64_t> parse_count(const std::string& text) {
  if (lower(text) == "unlimited") return kUnlimited;
  return parse_number(text);
}

}  // namespace netbox::policy
