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

}  // namespace netbox::proxy
