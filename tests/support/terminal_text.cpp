#include "support/terminal_text.hpp"

namespace netbox::test {

std::size_t first_unsafe_byte(const std::string& s, bool crlf_line_ends) {
  const auto at = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0; };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = at(i);
    const std::size_t n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    bool bad = n == 0;
    for (std::size_t k = 1; k < n; ++k) bad = bad || (at(i + k) & 0xc0) != 0x80;
    if (n == 1) bad = (c < 0x20 || c == 0x7f) && !(c == '\n' || (crlf_line_ends && c == '\r' && at(i + 1) == '\n'));
    if (n == 2) bad = bad || (c == 0xc2 && at(i + 1) <= 0x9f);
    if (n == 3) bad = bad || (c == 0xe2 && at(i + 1) == 0x80 && at(i + 2) == 0xae);
    if (bad) return i;
    i += n == 0 ? 1 : n;
  }
  return std::string::npos;
}

}  // namespace netbox::test
