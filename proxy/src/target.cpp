#include "target.hpp"

#include <boost/asio/ip/address_v6.hpp>

#include <algorithm>
#include <cctype>

namespace netbox::proxy {
namespace {

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// Splits "host", "host:port", "[v6]" or "[v6]:port". Refuses userinfo: a name before
// '@' is only ever used to make a URL look like it goes somewhere it does not.
void parse_authority(std::string_view auth, bool port_required, std::uint16_t default_port, Target& t) {
  if (auto at = auth.rfind('@'); at != std::string_view::npos) {
    parse_authority(auth.substr(at + 1), port_required, default_port, t);  // for the audit row only
    t.error = "the target contains userinfo ('user@host'); netbox refuses it because the destination would be "
              "the part after '@', not the name in front of it";
    return;
  }
  std::string_view host;
  std::string_view port;
  bool has_port = false;
  if (!auth.empty() && auth.front() == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos) {
      t.error = "unterminated '[' in the target's host";
      return;
    }
    host = auth.substr(1, close - 1);
    // A zone id ("%25eth0", or a bare "%eth0") names an interface of the proxy's host:
    // refused outright, whatever the address parser would make of it.
    if (host.find('%') != std::string_view::npos) {
      t.error = "IPv6 zone ids ('%') are not allowed in a host";
      return;
    }
    // Brackets hold an IPv6 literal and nothing else; "[example.com]" must not pass as a name.
    boost::system::error_code v6_ec;
    boost::asio::ip::make_address_v6(std::string(host), v6_ec);
    if (v6_ec) {
      t.error = "brackets in the target's host may only hold an IPv6 address";
      return;
    }
    auto rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        t.error = "unexpected characters after ']' in the target's host";
        return;
      }
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = auth.rfind(':');
    if (colon != std::string_view::npos && auth.find(':') != colon) {
      t.error = "an IPv6 address in a target must be written in brackets, e.g. [2001:db8::1]:443";
      return;
    }
    if (colon == std::string_view::npos) {
      host = auth;
    } else {
      host = auth.substr(0, colon);
      port = auth.substr(colon + 1);
      has_port = true;
    }
  }
  if (host.empty()) {
    t.error = "the target has no host";
    return;
  }
  if (!has_port || port.empty()) {
    if (port_required) {
      t.error = "CONNECT needs a target of the form host:port";
      return;
    }
    t.port = default_port;
  } else {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      t.error = "the target's port '" + std::string(port) + "' is not a number between 1 and 65535";
      return;
    }
    const unsigned long p = std::stoul(std::string(port));
    if (p < 1 || p > 65535) {
      t.error = "the target's port " + std::string(port) + " is not between 1 and 65535";
      return;
    }
    t.port = static_cast<std::uint16_t>(p);
  }
  t.host = std::string(host);
}

}  // namespace

Target parse_absolute_target(std::string_view target) {
  Target t;
  if (!target.empty() && target.front() == '/') {
    t.error = "the request target is in origin-form (" + std::string(target.substr(0, 64)) +
              "); send requests to netbox as a proxy, with an absolute URL such as http://example.com/";
    return t;
  }
  if (iequals_prefix(target, "https://")) {
    t.error = "https:// URLs must go through a CONNECT tunnel (use the proxy as an HTTPS proxy)";
    return t;
  }
  if (!iequals_prefix(target, "http://")) {
    t.error = "the request target must be an absolute http:// URL";
    return t;
  }
  auto rest = target.substr(7);
  auto end = rest.find_first_of("/?#");
  auto auth = rest.substr(0, end);
  parse_authority(auth, false, 80, t);
  if (!t.error.empty()) return t;
  std::string_view pq = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  if (auto hash = pq.find('#'); hash != std::string_view::npos) pq = pq.substr(0, hash);
  t.path_and_query = pq.empty() || pq.front() != '/' ? "/" + std::string(pq) : std::string(pq);
  t.path = t.path_and_query.substr(0, t.path_and_query.find('?'));
  return t;
}

Target parse_connect_target(std::string_view target) {
  Target t;
  parse_authority(target, true, 0, t);
  return t;
}

std::string host_header(std::string_view host, std::uint16_t port, std::uint16_t default_port) {
  std::string h = host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  if (port != default_port) h += ":" + std::to_string(port);
  return h;
}

std::string authority(std::string_view host, std::uint16_t port) {
  if (host.find(':') != std::string_view::npos) return "[" + std::string(host) + "]:" + std::to_string(port);
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace netbox::proxy
