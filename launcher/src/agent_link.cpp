#include "netbox/launcher/agent_link.hpp"

#include "netbox/launcher/nft_rules.hpp"
#include "netbox/launcher/rtnetlink.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace netbox::launcher {
namespace {

constexpr std::uint16_t kHttpPort = 3128;   // what people expect in HTTP_PROXY
constexpr std::uint16_t kSocksPort = 1080;  // ... and in ALL_PROXY

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

// A bound socket of `type` on `addr`:`port` (0: any free port), listening when it is TCP.
int open_socket(const char* addr, std::uint16_t port, int type) {
  const bool v6 = std::strchr(addr, ':') != nullptr;
  const std::string where = std::string(v6 ? "[" : "") + addr + (v6 ? "]:" : ":") + std::to_string(port);
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("the agent's socket on " + where);
  int one = 1;
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(port);
    ::inet_pton(AF_INET6, addr, &sa->sin6_addr);
    len = sizeof *sa;
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    ::inet_pton(AF_INET, addr, &sa->sin_addr);
    len = sizeof *sa;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      (type == SOCK_STREAM && ::listen(fd, SOMAXCONN) != 0)) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail("the agent's socket on " + where);
  }
  return fd;
}

std::uint16_t port_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) fail("the agent's capture socket");
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

void close_all(proxy::AgentSockets& s) {
  for (auto* v : {&s.http, &s.socks, &s.capture})
    for (int fd : *v) ::close(fd);
  if (s.dns_udp >= 0) ::close(s.dns_udp);
  if (s.dns_tcp >= 0) ::close(s.dns_tcp);
  if (s.diag >= 0) ::close(s.diag);
  s = {};
}

// Everything made inside the namespace; the calling thread must be in it.
void make_inside(proxy::AgentSockets& s, ProxyPorts& ports, bool capture) {
  set_link_up("lo");
  for (const char* addr : {"127.0.0.1", "::1"}) {
    s.http.push_back(open_socket(addr, kHttpPort, SOCK_STREAM));
    s.socks.push_back(open_socket(addr, kSocksPort, SOCK_STREAM));
  }
  ports.http = kHttpPort;
  ports.socks = kSocksPort;
  // The proxy asks the namespace's socket table through it which of the agent's sockets a
  // connection came from (who made the request, issue 27): a netlink socket answers for the
  // namespace it was made in, so the proxy itself never enters this one.
  s.diag = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (s.diag < 0) fail("the agent's sock_diag socket");
  if (capture) {
    s.capture.push_back(open_socket("127.0.0.1", 0, SOCK_STREAM));
    ports.capture = port_of(s.capture.front());
    s.capture.push_back(open_socket("::1", ports.capture, SOCK_STREAM));  // the redirect names one port
    s.dns_udp = open_socket(kLinkDnsAddress, 53, SOCK_DGRAM);
    s.dns_tcp = open_socket(kLinkDnsAddress, 53, SOCK_STREAM);
    add_local_default_route(AF_INET);
    add_local_default_route(AF_INET6);
    // getaddrinfo(AF_INET or AF_INET6, AI_ADDRCONFIG) (getent ahostsv4, many resolvers)
    // answers nothing in a namespace whose only addresses are 127.0.0.1 and ::1: glibc
    // counts those as no address at all. One more of each on lo, both purely local (the
    // IPv6 one in netbox's own range, which the proxy refuses as a destination).
    add_ipv4_address("lo", kLinkDnsAddress, 32);
    add_ipv6_address("lo", kLinkLocalAddress6, 128);
  }
  install_link_rules(ports, kLinkDnsAddress);
}

}  // namespace

AgentLink::~AgentLink() { close_all(sockets_); }

AgentLink& AgentLink::operator=(AgentLink&& o) noexcept {
  if (this != &o) {
    close_all(sockets_);
    sockets_ = std::exchange(o.sockets_, {});
    ports_ = o.ports_;
  }
  return *this;
}

AgentLink AgentLink::make(pid_t pid, bool capture) {
  AgentLink link;
  const std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
  const int nsfd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) fail("opening the agent's network namespace " + ns);
  // A thread of its own enters the namespace (setns moves only the calling thread) and ends
  // with it: the launcher's other threads, and its own later sockets, stay on the host's.
  std::exception_ptr error;
  std::thread inside([&] {
    try {
      if (::setns(nsfd, CLONE_NEWNET) != 0) fail("entering the agent's network namespace");
      make_inside(link.sockets_, link.ports_, capture);
    } catch (...) {
      error = std::current_exception();
    }
  });
  inside.join();
  ::close(nsfd);
  if (error) std::rethrow_exception(error);
  return link;
}

}  // namespace netbox::launcher
