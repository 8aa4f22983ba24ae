// Host labels that carry data (issue 25, content rules): see secret_formats.hpp for the
// rule and docs/policy.md for its thresholds.
#include "netbox/content/secret_formats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace netbox::content {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'; }

double entropy(std::string_view s) {
  std::array<unsigned, 256> counts{};
  for (unsigned char c : s) ++counts[c];
  double h = 0;
  for (unsigned n : counts) {
    if (n == 0) continue;
    const double p = static_cast<double>(n) / static_cast<double>(s.size());
    h -= p * std::log2(p);
  }
  return h;
}

// Why `part` looks encoded, or empty.
std::string encoded_part(std::string_view part) {
  if (part.size() < kEncodedPartMin) return {};
  std::size_t digits = 0, hex = 0, run = 0, longest_run = 0;
  for (char c : part) {
    digits += is_digit(c);
    hex += is_hex(c);
    run = is_vowel(c) ? 0 : run + 1;
    longest_run = std::max(longest_run, run);
  }
  if (hex == part.size() && digits > 0 && digits < part.size()) return std::to_string(part.size()) + " hex digits";
  if (longest_run >= kEncodedRunMin) return std::to_string(longest_run) + " characters without a vowel in a row";
  const double h = entropy(part);
  if (h < kEncodedEntropyMin || digits < 2) return {};
  char why[96];
  std::snprintf(why, sizeof why, "entropy %.1f bits per character over %zu characters", h, part.size());
  return why;
}

}  // namespace

std::optional<EncodedLabel> encoded_label(std::string_view host) {
  while (!host.empty()) {
    const auto dot = host.find('.');
    const std::string_view label = host.substr(0, dot);
    std::string_view rest = label;
    while (true) {
      const auto hyphen = rest.find('-');
      if (auto why = encoded_part(rest.substr(0, hyphen)); !why.empty()) return EncodedLabel{std::string(label), why};
      if (hyphen == std::string_view::npos) break;
      rest.remove_prefix(hyphen + 1);
    }
    if (dot == std::string_view::npos) break;
    host.remove_prefix(dot + 1);
  }
  return std::nullopt;
}

}  // namespace netbox::content
