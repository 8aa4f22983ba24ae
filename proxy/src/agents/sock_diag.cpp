#include "agents/sock_diag.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstring>

namespace netbox::proxy {
namespace {

void put_address(__be32 (&out)[4], const boost::asio::ip::address& a) {
  if (a.is_v4()) {
    const auto bytes = a.to_v4().to_bytes();
    std::memcpy(&out[0], bytes.data(), bytes.size());
  } else {
    const auto bytes = a.to_v6().to_bytes();
    std::memcpy(&out[0], bytes.data(), bytes.size());
  }
}

std::atomic<std::uint32_t> next_seq{1};

// Answers to earlier questions that came after their deadline: dropped before asking again.
void drain(int fd) {
  std::array<char, 1024> buf;
  while (::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT) > 0) {
  }
}

}  // namespace

bool is_sock_diag_socket(int fd) {
  int value = -1;
  socklen_t len = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0 || value != AF_NETLINK) return false;
  len = sizeof value;
  return ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &value, &len) == 0 && value == NETLINK_SOCK_DIAG;
}

std::optional<std::uint64_t> peer_socket_inode(int diag_fd, const boost::asio::ip::tcp::endpoint& local,
                                               const boost::asio::ip::tcp::endpoint& peer,
                                               std::chrono::milliseconds wait) {
  if (local.address().is_v4() != peer.address().is_v4()) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 req;
  } ask{};
  const std::uint32_t seq = next_seq.fetch_add(1);
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST;  // one socket by its four-tuple, not a dump
  ask.header.nlmsg_seq = seq;
  ask.req.sdiag_family = peer.address().is_v4() ? AF_INET : AF_INET6;
  ask.req.sdiag_protocol = IPPROTO_TCP;
  ask.req.idiag_states = ~0u;
  // The client's socket: its own end (src) is the peer we accepted, its other end (dst) us.
  ask.req.id.idiag_sport = htons(peer.port());
  ask.req.id.idiag_dport = htons(local.port());
  put_address(ask.req.id.idiag_src, peer.address());
  put_address(ask.req.id.idiag_dst, local.address());
  ask.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  ask.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  drain(diag_fd);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(diag_fd, &ask, sizeof ask, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(sizeof ask))
    return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  alignas(nlmsghdr) std::array<char, 8192> buf;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{diag_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    const ssize_t n = ::recv(diag_fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) return std::nullopt;
    // Each message: a header, then its payload, padded to NLMSG_ALIGNTO.
    for (std::size_t at = 0; at + sizeof(nlmsghdr) <= static_cast<std::size_t>(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf.data() + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > static_cast<std::size_t>(n)) break;
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != seq) continue;  // a late answer to an earlier question
      if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) return std::nullopt;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
        return std::nullopt;
      const auto* msg = reinterpret_cast<const inet_diag_msg*>(reinterpret_cast<const char*>(h) + NLMSG_HDRLEN);
      if (msg->idiag_inode == 0) return std::nullopt;  // a socket no process holds (TIME_WAIT, orphaned)
      return msg->idiag_inode;
    }
  }
}

}  // namespace netbox::proxy
