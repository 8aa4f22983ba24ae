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
  // The block of the same size right after this one (10.0.4.0/22 -> 10.0.8.0/22); none
  // past the end of the address space (and for a prefix of 0).
  std::optional<Cidr> next() const;
  // Strict: "10.0.0.0/8", "fc00::/7", or a bare address (full-length prefix). Host bits must be zero.
  static std::optional<Cidr> parse(std::string_view text);
};

}  // namespace netbox::policy
