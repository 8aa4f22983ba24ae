#pragma once
// Links and addresses over rtnetlink (libmnl); never by running `ip`.
// Each call acts on the network namespace of the calling process and throws
// std::runtime_error naming the interface on failure.
#include <sys/types.h>

#include <chrono>
#include <string>

namespace netbox::launcher {

// Creates `host_name` in this namespace and its peer `peer_name` directly inside the
// network namespace of process `peer_pid`.
void create_veth_pair(const std::string& host_name, const std::string& peer_name, pid_t peer_pid);
void add_ipv4_address(const std::string& ifname, const std::string& address, int prefix);
// Without duplicate address detection (IFA_F_NODAD): the link is a fresh veth pair whose
// other end netbox numbers itself, and a tentative address could not be used at once.
void add_ipv6_address(const std::string& ifname, const std::string& address, int prefix);
void set_link_up(const std::string& ifname);
// A default route via `gateway` on `ifname`: transparent capture needs the kernel to route
// a connection to any address before the nat output hook sends it to the proxy.
void add_default_route(const std::string& ifname, const std::string& gateway);
void add_ipv6_default_route(const std::string& ifname, const std::string& gateway);
// `local default dev lo` for AF_INET or AF_INET6: every address is this namespace's own, so
// a connect() to any of them gets a route (and stays inside) for the nat output hook to
// redirect it to the proxy's capture socket; no device leads anywhere.
void add_local_default_route(int family);
// Returns false when the link did not exist.
bool delete_link(const std::string& ifname);
bool link_exists(const std::string& ifname);
// Waits (on RTM_DELLINK notifications) until the link is gone, at most `limit`.
// Returns whether it is gone. Never throws.
bool wait_until_link_gone(const std::string& ifname, std::chrono::milliseconds limit) noexcept;

}  // namespace netbox::launcher
