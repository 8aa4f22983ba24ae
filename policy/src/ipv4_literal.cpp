#include "ipv4_literal.hpp"

#include <array>
#include <cstddef>

namespace netbox::policy::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

// A label "looks numeric" when it is all decimal digits or 0x followed by hex digits
// (or bare "0x"): resolvers and inet_aton read such labels as numbers, so we must too.
bool looks_numeric(std::string_view label) {
  if (label.empty()) return false;
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
    for (std::size_t i = 2; i < label.size(); ++i)
      if (!is_hex(label[i])) return false;
    return true;
  }
  for (char c : label)
    if (!is_digit(c)) return false;
  return true;
}

// One inet_aton part: decimal, octal (leading 0) or hex (0x). Values past 32 bits are refused.
std::optional<uint64_t> read_part(std::string_view p) {
  if (p.empty()) return std::nullopt;
  unsigned base = 10;
  if (p.size() >= 2 && p[0] == '0' && p[1] == 'x') {
    base = 16;
    p.remove_prefix(2);
    if (p.empty()) return std::nullopt;
  } else if (p.size() >= 2 && p[0] == '0') {
    base = 8;
    p.remove_prefix(1);
  }
  uint64_t v = 0;
  for (char c : p) {
    unsigned d = 0;
    if (is_digit(c)) d = static_cast<unsigned>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    v = v * base + d;
    if (v > 0xffffffffULL) return std::nullopt;
  }
  return v;
}

}  // namespace

Ipv4Reading read_ipv4_literal(std::string_view text) {
  std::size_t last_dot = text.rfind('.');
  std::string_view last = last_dot == std::string_view::npos ? text : text.substr(last_dot + 1);
  if (!looks_numeric(last)) return {};

  std::array<uint64_t, 4> parts{};
  std::size_t n = 0;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = text.find('.', start);
    std::string_view p = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (n == parts.size()) return {NumericHost::malformed, 0};
    auto v = read_part(p);
    if (!v) return {NumericHost::malformed, 0};
    parts[n++] = *v;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  // All parts but the last are single bytes; the last fills the remaining bytes.
  uint64_t value = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (parts[i] > 0xff) return {NumericHost::malformed, 0};
    value |= parts[i] << (8 * (3 - i));
  }
  unsigned rest_bits = static_cast<unsigned>(8 * (4 - (n - 1)));
  uint64_t last_value = parts[n - 1];
  if (rest_bits < 64 && last_value >= (uint64_t{1} << rest_bits)) return {NumericHost::malformed, 0};
  value |= last_value;
  return {NumericHost::address, static_cast<uint32_t>(value)};
}

}  // namespace netbox::policy::detail
