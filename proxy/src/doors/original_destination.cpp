#include "doors/original_destination.hpp"

#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

namespace netbox::proxy {

namespace ip = boost::asio::ip;

std::optional<ip::tcp::endpoint> original_destination(ip::tcp::socket& s) {
  boost::system::error_code ec;
  const auto local = s.local_endpoint(ec);
  if (ec) return std::nullopt;
  // The option of the socket's own family: an IPv6 connection's conntrack answers only
  // IP6T_SO_ORIGINAL_DST (the agent's link has no v4-mapped addresses).
  if (local.address().is_v6()) {
    sockaddr_in6 dst{};
    socklen_t len = sizeof dst;
    if (::getsockopt(s.native_handle(), SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) != 0 || dst.sin6_family != AF_INET6)
      return std::nullopt;
    ip::address_v6::bytes_type bytes{};
    std::copy_n(dst.sin6_addr.s6_addr, bytes.size(), bytes.begin());
    return ip::tcp::endpoint(ip::address_v6(bytes), ntohs(dst.sin6_port));
  }
  sockaddr_in dst{};
  socklen_t len = sizeof dst;
  if (::getsockopt(s.native_handle(), SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0 || dst.sin_family != AF_INET)
    return std::nullopt;
  return ip::tcp::endpoint(ip::address_v4(ntohl(dst.sin_addr.s_addr)), ntohs(dst.sin_port));
}

}  // namespace netbox::proxy
