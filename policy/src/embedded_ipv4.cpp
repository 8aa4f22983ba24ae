#include "embedded_ipv4.hpp"

#include <array>
#include <cstdint>

namespace netbox::policy::detail {
namespace {

using Bytes = boost::asio::ip::address_v6::bytes_type;

bool all_zero(const Bytes& b, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i)
    if (b[i] != 0) return false;
  return true;
}

boost::asio::ip::address_v4 v4_at(const Bytes& b, std::size_t at, uint8_t x = 0) {
  return boost::asio::ip::address_v4(boost::asio::ip::address_v4::bytes_type{
      static_cast<unsigned char>(b[at] ^ x), static_cast<unsigned char>(b[at + 1] ^ x),
      static_cast<unsigned char>(b[at + 2] ^ x), static_cast<unsigned char>(b[at + 3] ^ x)});
}

}  // namespace

std::optional<boost::asio::ip::address_v4> mapped_ipv4(const boost::asio::ip::address_v6& a) {
  Bytes b = a.to_bytes();
  if (all_zero(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) return v4_at(b, 12);
  return std::nullopt;
}

std::optional<EmbeddedIpv4> embedded_ipv4(const boost::asio::ip::address_v6& a) {
  Bytes b = a.to_bytes();
  // ::ffff:0:0/96, IPv4-mapped
  if (auto m = mapped_ipv4(a)) return EmbeddedIpv4{*m, "IPv4-mapped"};
  // ::ffff:0:0:0/96, IPv4-translated (SIIT, RFC 2765)
  if (all_zero(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0)
    return EmbeddedIpv4{v4_at(b, 12), "IPv4-translated"};
  // ::/96, IPv4-compatible (deprecated); covers :: and ::1 as 0.0.0.0 and 0.0.0.1
  if (all_zero(b, 0, 12)) return EmbeddedIpv4{v4_at(b, 12), "IPv4-compatible"};
  // 64:ff9b::/96, well-known NAT64 prefix (RFC 6052)
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && all_zero(b, 4, 12))
    return EmbeddedIpv4{v4_at(b, 12), "NAT64"};
  // 64:ff9b:1::/48, local-use NAT64 (RFC 8215); the v4 sits in the last 32 bits
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01)
    return EmbeddedIpv4{v4_at(b, 12), "NAT64"};
  // 2002::/16, 6to4: the v4 gateway in bits 16-48
  if (b[0] == 0x20 && b[1] == 0x02) return EmbeddedIpv4{v4_at(b, 2), "6to4"};
  // 2001::/32, Teredo: the client's v4 is stored inverted in the last 32 bits
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00)
    return EmbeddedIpv4{v4_at(b, 12, 0xff), "Teredo"};
  return std::nullopt;
}

}  // namespace netbox::policy::detail
