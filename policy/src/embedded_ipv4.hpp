#pragma once
// IPv6 addresses that carry an IPv4 address inside them. A connection to one of these
// may end up at the embedded IPv4 host, so deny rules and internal ranges look through them.
#include <boost/asio/ip/address.hpp>

#include <optional>
#include <string_view>

namespace netbox::policy::detail {

struct EmbeddedIpv4 {
  boost::asio::ip::address_v4 v4;
  std::string_view form;  // "IPv4-mapped", "NAT64", "6to4", "Teredo", "IPv4-compatible", ...
};

// The IPv4 address inside `a`, for the forms that route to it; nothing for plain IPv6.
std::optional<EmbeddedIpv4> embedded_ipv4(const boost::asio::ip::address_v6& a);

// The IPv4-mapped form only: ::ffff:a.b.c.d is the same socket as a.b.c.d.
std::optional<boost::asio::ip::address_v4> mapped_ipv4(const boost::asio::ip::address_v6& a);

}  // namespace netbox::policy::detail
