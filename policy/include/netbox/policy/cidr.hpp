#pragma once
#include <boost/asio/ip/address.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace netbox::policy {

// An address range. IPv4 ranges also match IPv4-mapped IPv6 addresses (::ffff:a.b.c.d).
struct Cidr {
  boost::asio::ip::address base;
  unsigned prefix = 0;

  bool contains(const boost::asio::ip::address& a) const;
  std::string to_string() const;
  // Strict: "10.0.0.0/8", "fc00::/7", or a bare address (full-length prefix). Host bits must be zero.
  static std::optional<Cidr> parse(std::string_view text);
};

}  // namespace netbox::policy
