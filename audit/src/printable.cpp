#include "netbox/audit/printable.hpp"

#include <cstdint>
#include <cstdio>

namespace netbox::audit {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF) and its code point; 0 when the byte there does not start one.
std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead < 0x80) {
    cp = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2, cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3, cp = lead & 0x0Fu;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4, cp = lead & 0x07u;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char c = b(k);
    if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  return n;
}

// Code points that move the cursor, start a terminal sequence, or change the order in
// which the rest of a line is shown.
bool is_unsafe(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_hex(std::string& out, const char* format, unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof buf, format, value);
  out += buf;
}

}  // namespace

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      append_hex(out, "\\x%02x", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (!is_unsafe(cp)) out.append(text.substr(i, n));
    else if (cp < 0x80) append_hex(out, "\\x%02x", static_cast<unsigned>(cp));
    else append_hex(out, "\\u%04x", static_cast<unsigned>(cp));
    i += n;
  }
  return out;
}

bool needs_escaping(std::string_view text) {
  // Printable ASCII, byte by byte, first: almost every value (hosts, paths, methods) is
  // only that, and the UTF-8 decoding below is then not needed.
  std::size_t i = 0;
  while (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x20 && static_cast<unsigned char>(text[i]) < 0x7F) ++i;
  for (; i < text.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (n == 0 || is_unsafe(cp)) return true;
    i += n;
  }
  return false;
}

std::string escape_controls_in_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(json, i, cp);
    if (n == 0) {
      out += "\\ufffd";  // the serializer replaces bad UTF-8; should a byte slip through, never raw
      ++i;
      continue;
    }
    // Below U+0020 only the layout's own newlines remain: the serializer escapes the rest.
    if (cp >= 0x20 && is_unsafe(cp)) append_hex(out, "\\u%04x", static_cast<unsigned>(cp));
    else out.append(json.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace netbox::audit
