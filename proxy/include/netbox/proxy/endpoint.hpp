#pragma once
// ADDR:PORT as netbox's flags, control messages and log lines write it: 127.0.0.1:3128,
// [::1]:3128. One parser, so --listen, --admin, --dns-server and the control socket's
// "listen" accept and refuse the same things with the same words.
#include <boost/asio/ip/tcp.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace netbox::proxy {

// Whether port 0 ("let the kernel pick one") means something for this value: it does
// for a listener, not for an address to send to (a DNS server).
enum class PortZero { allowed, refused };

// An IPv4 address or an IPv6 address in brackets (a zone such as %eth0 is kept), a colon,
// and a decimal port 0-65535 (leading zeros allowed, at most 5 digits). Host names are
// refused: every use binds or sends to an address, and a name would be resolved where no
// policy decides on it. Throws std::invalid_argument whose what() starts with the value
// (control characters escaped) and says what is wrong, e.g.
//   'localhost:80': 'localhost' is not an IP address (expected ADDR:PORT, e.g. ...)
// so a caller prefixes the flag or key: "--listen " + e.what().
boost::asio::ip::tcp::endpoint parse_endpoint(std::string_view text, PortZero zero = PortZero::allowed);

// The same form back: "127.0.0.1:3128", "[::1]:3128".
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& ep);

// An address as to_string() spells it. IPv4 is written by hand: to_string() goes through
// inet_ntop, whose sprintf was a measurable part of a request's CPU (two per request).
std::string address_text(const boost::asio::ip::address& addr);

}  // namespace netbox::proxy
