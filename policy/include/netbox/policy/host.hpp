#pragma once
// Normalising what an agent names as its destination: host names and IP literals.
#include <boost/asio/ip/address.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace netbox::policy {

// A destination host after normalisation. Exactly one of `name` / `ip` is meaningful:
// a literal (in any form inet_aton would take: 127.1, 2130706433, 0x7f000001, 0177.0.0.1,
// or IPv6 in brackets or bare) becomes `ip`; everything else becomes a lowercase,
// trailing-dot-stripped, punycode (IDNA2008) `name`.
struct Host {
  std::string name;                           // normalised name, or the canonical text of `ip`
  std::optional<boost::asio::ip::address> ip; // set for IP literals

  bool is_ip() const { return ip.has_value(); }
};

struct HostError {
  std::string message;  // e.g. "host name contains a control character"
};

// Returns the normalised host, or an error for anything ambiguous (empty, NUL/control
// characters, bad IDNA, zone ids, percent-encoding, a numeric form that is not a valid address).
struct HostParse {
  std::optional<Host> host;
  HostError error;
  explicit operator bool() const { return host.has_value(); }
};
HostParse parse_host(std::string_view raw);

}  // namespace netbox::policy
