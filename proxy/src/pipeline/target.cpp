#include "pipeline/target.hpp"

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

struct HostPort {
  std::string_view host;
  std::string_view port;
  bool has_port = false;
};

// "[v6]" or "[v6]:port": the brackets hold an IPv6 literal and nothing else. Empty, or what
// is wrong.
std::string split_bracketed(std::string_view auth, HostPort& hp) {
  auto close = auth.find(']');
  if (close == std::string_view::npos) return "unterminated '[' in the target's host";
  hp.host = auth.substr(1, close - 1);
  // A zone id ("%25eth0", or a bare "%eth0") names an interface of the proxy's host:
  // refused outright, whatever the address parser would make of it.
  if (hp.host.find('%') != std::string_view::npos) return "IPv6 zone ids ('%') are not allowed in a host";
  // "[example.com]" must not pass as a name.
  boost::system::error_code v6_ec;
  boost::asio::ip::make_address_v6(std::string(hp.host), v6_ec);
  if (v6_ec) return "brackets in the target's host may only hold an IPv6 address";
  auto rest = auth.substr(close + 1);
  if (rest.empty()) return {};
  if (rest.front() != ':') return "unexpected characters after ']' in the target's host";
  hp.port = rest.substr(1);
  hp.has_port = true;
  return {};
}

// "host", "host:port", "[v6]" or "[v6]:port". Empty, or what is wrong.
std::string split_authority(std::string_view auth, HostPort& hp) {
  if (!auth.empty() && auth.front() == '[') return split_bracketed(auth, hp);
  auto colon = auth.rfind(':');
  if (colon != std::string_view::npos && auth.find(':') != colon)
    return "an IPv6 address in a target must be written in brackets, e.g. [2001:db8::1]:443";
  if (colon == std::string_view::npos) {
    hp.host = auth;
    return {};
  }
  hp.host = auth.substr(0, colon);
  hp.port = auth.substr(colon + 1);
  hp.has_port = true;
  return {};
}

// A target's port, 1 to 65535, into `out`. Empty, or what is wrong.
std::string read_port(std::string_view port, std::uint16_t& out) {
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return "the target's port '" + std::string(port) + "' is not a number between 1 and 65535";
  const unsigned long p = std::stoul(std::string(port));
  if (p < 1 || p > 65535) return "the target's port " + std::string(port) + " is not between 1 and 65535";
  out = static_cast<std::uint16_t>(p);
  return {};
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
  HostPort hp;
  if (t.error = split_authority(auth, hp); !t.error.empty()) return;
  if (hp.host.empty()) {
    t.error = "the target has no host";
    return;
  }
  if (!hp.has_port || hp.port.empty()) {
    if (port_required) {
      t.error = "CONNECT needs a target of the form host:port";
      return;
    }
    t.port = default_port;
  } else if (t.error = read_port(hp.port, t.port); !t.error.empty()) {
    return;
  }
  t.host = std::string(hp.host);
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
