#pragma once
// The proxy's descriptor budget. Every agent connection is a descriptor (two with its
// upstream), so the soft RLIMIT_NOFILE, often 1024, would cap the proxy far below what
// the machine allows: it is raised to the hard limit at start.
#include <cstddef>

namespace netbox::proxy {

// Raises the soft RLIMIT_NOFILE to the hard one (bounded by fs.nr_open when the hard
// limit is unlimited); returns the soft limit in force afterwards.
std::size_t raise_fd_limit();

// Agent connections the proxy takes at once when not told: half of what is left after
// `reserve`, since each may hold an upstream connection too; never below 16.
std::size_t derived_client_connection_limit(std::size_t fd_limit, std::size_t reserve);

// The first descriptor number no upstream dial may take (dialer.hpp): what lies above is
// kept for accepting agents and the audit store. `reserve`, or a quarter of the limit
// when that is less, so a low limit still leaves room for upstreams.
int dial_fd_ceiling(std::size_t fd_limit, std::size_t reserve);

// Idle upstream connections kept for reuse, in total and per agent: a quarter of the
// descriptor limit, and a quarter of that per agent, so no agent's idle connections take
// the descriptors others need. Shared evenly among the `threads` io threads' pools.
struct IdlePoolLimits {
  std::size_t total = 0;
  std::size_t per_agent = 0;
};
IdlePoolLimits idle_pool_limits(std::size_t fd_limit);
IdlePoolLimits per_thread(IdlePoolLimits limits, std::size_t threads);

}  // namespace netbox::proxy
