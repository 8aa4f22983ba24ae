#include "agents/agent_sockets.hpp"

#include "agents/agent_registry.hpp"
#include "agents/sock_diag.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netbox::proxy {

int socket_family(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  return ss.ss_family;
}

namespace {
int int_option(int fd, int option) {
  int value = -1;
  socklen_t len = sizeof value;
  return ::getsockopt(fd, SOL_SOCKET, option, &value, &len) == 0 ? value : -1;
}
}  // namespace

int adopt_agent_socket(int fd, int type, std::uint64_t own_netns, std::uint64_t& netns, const char* what) {
  const std::string name = std::string("the agent's ") + what + " socket";
  const int family = socket_family(fd);
  if (family != AF_INET && family != AF_INET6) throw std::invalid_argument(name + " is no IP socket");
  if (int_option(fd, SO_TYPE) != type) throw std::invalid_argument(name + " is of the wrong type");
  if (type == SOCK_STREAM && int_option(fd, SO_ACCEPTCONN) != 1) throw std::invalid_argument(name + " is not listening");
  // In the proxy's own namespace anyone on this host could connect to it and pass as the agent.
  const std::uint64_t cookie = netns_cookie(fd);
  if (cookie == 0 || cookie == own_netns)
    throw std::invalid_argument(name + " is not in a network namespace of the agent's own");
  if (netns == 0) netns = cookie;
  if (cookie != netns) throw std::invalid_argument(name + " is in another network namespace than the agent's other sockets");
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) throw std::runtime_error(name + ": " + std::strerror(errno));
  return copy;
}

int adopt_diag_socket(int fd, std::uint64_t netns) {
  if (!is_sock_diag_socket(fd)) throw std::invalid_argument("the agent's sock_diag socket is no NETLINK_SOCK_DIAG socket");
  // Made elsewhere, it would answer for another namespace's sockets: the wrong processes.
  if (netns_cookie(fd) != netns)
    throw std::invalid_argument("the agent's sock_diag socket is in another network namespace than its listeners");
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) throw std::runtime_error(std::string("the agent's sock_diag socket: ") + std::strerror(errno));
  return copy;
}

}  // namespace netbox::proxy
