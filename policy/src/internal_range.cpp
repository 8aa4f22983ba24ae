// The internal ranges: addresses an agent must not reach unless internal.allow lists them.
#include "netbox/policy/decide.hpp"

#include "embedded_ipv4.hpp"

#include <array>
#include <cstdint>
#include <string_view>

namespace netbox::policy {
namespace {

struct V4Range {
  uint32_t base;
  unsigned prefix;
  std::string_view what;
};

// Order matters: the metadata addresses come before the ranges that hold them.
constexpr std::array<V4Range, 15> kV4Ranges{{
    {0xa9fea9feU, 32, "cloud metadata"},                 // 169.254.169.254
    {0xa83f8110U, 32, "cloud metadata"},                 // 168.63.129.16, Azure wire server
    {0x00000000U, 8, "this network, 0.0.0.0/8"},
    {0x0a000000U, 8, "RFC 1918"},                         // 10/8
    {0x64400000U, 10, "carrier-grade NAT, RFC 6598"},    // 100.64/10
    {0x7f000000U, 8, "loopback"},                         // 127/8
    {0xa9fe0000U, 16, "link-local"},                      // 169.254/16
    {0xac100000U, 12, "RFC 1918"},                        // 172.16/12
    {0xc0000000U, 24, "IETF protocol assignments, 192.0.0.0/24"},
    {0xc0586300U, 24, "6to4 relay anycast"},              // 192.88.99/24
    {0xc0a80000U, 16, "RFC 1918"},                        // 192.168/16
    {0xc6120000U, 15, "benchmarking, 198.18.0.0/15"},
    {0xe0000000U, 4, "multicast"},                        // 224/4
    {0xffffffffU, 32, "broadcast"},
    {0xf0000000U, 4, "reserved, 240.0.0.0/4"},
}};

std::string_view v4_range(uint32_t a) {
  for (const auto& r : kV4Ranges) {
    uint32_t mask = r.prefix == 0 ? 0 : ~uint32_t{0} << (32 - r.prefix);
    if ((a & mask) == r.base) return r.what;
  }
  return {};
}

bool v6_prefix(const boost::asio::ip::address_v6::bytes_type& b, std::initializer_list<unsigned> lead,
               unsigned prefix) {
  std::array<unsigned char, 16> want{};
  std::size_t i = 0;
  for (unsigned v : lead) {
    want[i++] = static_cast<unsigned char>(v >> 8);
    want[i++] = static_cast<unsigned char>(v & 0xff);
  }
  for (unsigned bit = 0; bit < prefix; ++bit) {
    unsigned byte = bit / 8, shift = 7 - bit % 8;
    if (((b[byte] >> shift) & 1U) != ((want[byte] >> shift) & 1U)) return false;
  }
  return true;
}

std::string v6_range(const boost::asio::ip::address_v6& a) {
  auto b = a.to_bytes();
  if (a.is_unspecified()) return "unspecified address ::";
  if (a.is_loopback()) return "loopback";
  if (auto e = detail::embedded_ipv4(a)) {
    auto inner = v4_range(e->v4.to_uint());
    if (!inner.empty()) return std::string(e->form) + " " + std::string(inner);
    // A public IPv4 behind the deprecated forms still is no address anyone should use.
    if (e->form == "IPv4-compatible") return "IPv4-compatible, deprecated";
    return {};
  }
  if (v6_prefix(b, {0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254}, 128)) return "cloud metadata";
  if (v6_prefix(b, {0xfc00}, 7)) return "unique local, fc00::/7";
  if (v6_prefix(b, {0xfe80}, 10)) return "link-local";
  if (v6_prefix(b, {0xfec0}, 10)) return "site-local, deprecated";
  if (v6_prefix(b, {0xff00}, 8)) return "multicast";
  if (v6_prefix(b, {0x0100, 0, 0, 0}, 64)) return "discard-only, RFC 6666";
  // Like 198.18.0.0/15: never a real destination, and the DNS views' synthetic IPv6 pools.
  if (v6_prefix(b, {0x2001, 0x0002, 0}, 48)) return "benchmarking, 2001:2::/48";
  return {};
}

}  // namespace

std::string internal_range(const boost::asio::ip::address& addr) {
  if (addr.is_v4()) return std::string(v4_range(addr.to_v4().to_uint()));
  return v6_range(addr.to_v6());
}

}  // namespace netbox::policy
