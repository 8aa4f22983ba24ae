#include "netbox/export/placeholders.hpp"

#include "netbox/audit/placeholder_spelling.hpp"

#include <cctype>
#include <string_view>

namespace netbox::siem {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

std::string without_dots(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s)
    if (c != '.') out += c;
  return out;
}

// One round of %XX decoding; false when nothing was decoded (the text is final).
bool percent_decoded(std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool changed = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
      changed = true;
    } else {
      out += s[i];
    }
  }
  if (changed) s = std::move(out);
  return changed;
}

// Lower case, dots dropped (before decoding, as the tripwire reads a host name, and after,
// for a %2e), %XX decoded as many rounds as the tripwire decodes. Each round is linear and
// their number fixed: "%2525...41" cannot make it quadratic.
std::string normalized(const std::string& text) {
  std::string s = without_dots(text);
  for (int round = 0; round < audit::kPlaceholderPercentRounds; ++round)
    if (!percent_decoded(s)) break;
  s = without_dots(s);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The characters of a placeholder's name part (and of its dashes and hex: all of them).
bool in_placeholder(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// The placeholder's end (credential_secret.cpp make_placeholder): '-' and 32 lower-case hex.
bool random_part_at(std::string_view s, std::size_t at) {
  constexpr std::size_t kHexDigits = 32;
  if (s.size() - at < 1 + kHexDigits || s[at] != '-') return false;
  for (std::size_t i = at + 1; i <= at + kHexDigits; ++i)
    if (!(s[i] >= '0' && s[i] <= '9') && !(s[i] >= 'a' && s[i] <= 'f')) return false;
  return true;
}

// Whether `s` holds nbx-NAME-<32 hex>, NAME any run of [a-z0-9_-] (the regex
// "nbx-[a-z0-9_-]*-[0-9a-f]{32}" this replaces). In one linear pass: std::regex
// backtracks, and an agent's 8 KB of "nbx-nbx-..." cost it 0.7 s a field. A run of
// placeholder characters is searched once from its first "nbx-": a later "nbx-" in the
// same run could only end where the first one can.
bool holds_placeholder_shape(std::string_view s) {
  std::size_t from = 0;
  while ((from = s.find("nbx-", from)) != std::string_view::npos) {
    std::size_t at = from + 4;
    for (; at < s.size() && in_placeholder(s[at]); ++at)
      if (random_part_at(s, at)) return true;
    from = at;
  }
  return false;
}

}  // namespace

bool withhold_placeholder(std::string& text) {
  if (text.size() < 4 + 1 + 32) return false;
  if (!holds_placeholder_shape(normalized(text))) return false;
  text = "[withheld: holds a credential's placeholder]";
  return true;
}

}  // namespace netbox::siem
