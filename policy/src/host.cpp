#include "netbox/policy/host.hpp"

#include "ipv4_literal.hpp"

#include <idn2.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace netbox::policy {
namespace {

HostParse fail(std::string message) { return HostParse{std::nullopt, HostError{std::move(message)}}; }

HostParse ok(Host h) { return HostParse{std::move(h), {}}; }

// Well-formed UTF-8, without overlong forms or surrogates.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return false;
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

// Characters that never belong in a host and that different parsers read differently
// (userinfo, paths, escapes, zone ids), so the host is refused rather than guessed at.
std::optional<std::string> forbidden_character(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == 0) return "host contains a NUL byte";
    if (c < 0x20 || c == 0x7f) return "host contains a control character";
    if (c == ' ') return "host contains a space";
    if (c == '%') return "host contains '%' (percent-encoding and zone ids are not allowed)";
    if (c == '@') return "host contains '@' (user information is not part of a host)";
    if (c == '/') return "host contains '/'";
    if (c == '\\') return "host contains '\\'";
  }
  return std::nullopt;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool is_ldh_or_underscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A name IDNA would return unchanged: ASCII letters, digits, '-' and '_' in labels that
// neither start nor end with '-' and have no "--" in positions 3-4 (where "xn--" lives).
// Most requests are such names; they skip libidn2, which costs microseconds.
bool idna_unchanged_ascii(const std::string& name) {
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t dot = name.find('.', start);
    std::size_t end = dot == std::string::npos ? name.size() : dot;
    std::string_view label(name.data() + start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    if (label.size() >= 4 && label[2] == '-' && label[3] == '-') return false;
    for (char c : label)
      if (!is_ldh_or_underscore(c)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
  return false;
}

HostParse parse_ipv6(std::string_view text) {
  if (text.find('%') != std::string_view::npos)
    return fail("IPv6 zone ids ('%') are not allowed in a host");
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address_v6(std::string(text), ec);
  if (ec) return fail("'" + std::string(text) + "' is not a valid IPv6 address");
  boost::asio::ip::address addr(a);
  return ok(Host{addr.to_string(), addr});
}

HostParse check_labels(const std::string& name) {
  if (name.size() > 253) return fail("host name is longer than 253 characters");
  std::size_t start = 0;
  while (true) {
    std::size_t dot = name.find('.', start);
    std::size_t end = dot == std::string::npos ? name.size() : dot;
    if (end == start) return fail("host name '" + name + "' has an empty label");
    if (end - start > 63) return fail("host name '" + name + "' has a label longer than 63 characters");
    for (std::size_t i = start; i < end; ++i)
      if (!is_ldh_or_underscore(name[i]))
        return fail("host name '" + name + "' contains '" + std::string(1, name[i]) + "'");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return ok(Host{name, std::nullopt});
}

}  // namespace

HostParse parse_host(std::string_view raw) {
  if (raw.empty()) return fail("host is empty");
  if (auto bad = forbidden_character(raw)) return fail(*bad);
  if (!valid_utf8(raw)) return fail("host is not valid UTF-8");

  // IPv6, bracketed as in a URL or bare as an agent may write it.
  if (raw.front() == '[') {
    if (raw.back() != ']' || raw.size() < 3) return fail("host '" + std::string(raw) + "' has an unclosed '['");
    return parse_ipv6(raw.substr(1, raw.size() - 2));
  }
  if (raw.find(':') != std::string_view::npos) return parse_ipv6(raw);
  if (raw.find_first_of("[]") != std::string_view::npos)
    return fail("host '" + std::string(raw) + "' contains '[' or ']' outside an IPv6 literal");

  std::string name = ascii_lower(raw);
  if (name.back() == '.') name.pop_back();  // exactly one: "a.." stays wrong below
  if (name.empty()) return fail("host is empty");

  // Non-ASCII text is read as numeric only after IDNA mapping (fullwidth digits).
  bool ascii_only = std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  auto numeric = ascii_only ? detail::read_ipv4_literal(name) : detail::Ipv4Reading{};
  if (numeric.kind == detail::NumericHost::address) {
    boost::asio::ip::address addr(boost::asio::ip::address_v4(numeric.value));
    return ok(Host{addr.to_string(), addr});
  }
  if (numeric.kind == detail::NumericHost::malformed)
    return fail("'" + std::string(raw) + "' looks like an IPv4 address but is not a valid one");

  if (ascii_only && idna_unchanged_ascii(name)) return check_labels(name);

  // IDNA2008 with UTS #46 mapping (as browsers look names up); plain ASCII goes through
  // too so that malformed "xn--" labels are caught.
  char* out = nullptr;
  int rc = idn2_to_ascii_8z(name.c_str(), &out, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
  std::unique_ptr<char, decltype(&idn2_free)> guard(out, &idn2_free);
  if (rc != IDN2_OK)
    return fail("host '" + std::string(raw) + "' is not a valid internationalised name: " + idn2_strerror(rc));
  std::string ascii = ascii_lower(out);
  // The ASCII form may end up numeric ("１２７.0.0.1" maps to digits): read it again.
  auto again = detail::read_ipv4_literal(ascii);
  if (again.kind == detail::NumericHost::address) {
    boost::asio::ip::address addr(boost::asio::ip::address_v4(again.value));
    return ok(Host{addr.to_string(), addr});
  }
  if (again.kind == detail::NumericHost::malformed)
    return fail("'" + std::string(raw) + "' looks like an IPv4 address but is not a valid one");
  return check_labels(ascii);
}

}  // namespace netbox::policy
