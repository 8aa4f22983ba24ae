#pragma once
// The sockets a launcher made inside an agent's network namespace (AgentSockets), as the
// proxy takes them over: each one checked for what it must be and duplicated, so the
// proxy owns its copy whatever the caller does with its own.
#include <cstdint>

namespace netbox::proxy {

// AF_INET or AF_INET6 (getsockname); -1 when unknown.
int socket_family(int fd);

// A close-on-exec duplicate of `fd`, which must be a bound socket of `type` (SOCK_STREAM:
// listening, too) in a network namespace other than the proxy's (`own_netns`) and the same
// as every other socket of the agent (`netns`, set by the first). Throws
// std::invalid_argument naming `what` otherwise.
int adopt_agent_socket(int fd, int type, std::uint64_t own_netns, std::uint64_t& netns, const char* what);

// A close-on-exec duplicate of `fd`, which must be a NETLINK_SOCK_DIAG socket made in the
// agent's network namespace (`netns`). Throws std::invalid_argument otherwise.
int adopt_diag_socket(int fd, std::uint64_t netns);

}  // namespace netbox::proxy
