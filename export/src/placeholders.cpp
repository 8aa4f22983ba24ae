#include "netbox/export/placeholders.hpp"

#include <cctype>
#include <regex>

namespace netbox::siem {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Lower case, %XX decoded (twice over, for %25XX), dots and other separators dropped.
std::string normalized(const std::string& text) {
  std::string s = text;
  for (int round = 0; round < 2; ++round) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
        out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
        i += 2;
      } else {
        out += s[i];
      }
    }
    s = std::move(out);
  }
  std::string out;
  for (const char c : s) {
    if (c == '.') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

bool withhold_placeholder(std::string& text) {
  if (text.size() < 4 + 1 + 32) return false;
  const std::string s = normalized(text);
  if (s.find("nbx-") == std::string::npos) return false;
  static const std::regex kPlaceholder("nbx-[a-z0-9_-]*-[0-9a-f]{32}");
  if (!std::regex_search(s, kPlaceholder)) return false;
  text = "[withheld: holds a credential's placeholder]";
  return true;
}

}  // namespace netbox::siem
