#pragma once
// Links, addresses and routes over rtnetlink (libmnl); never by running `ip`.
// Each call acts on the network namespace of the calling process and throws
// std::runtime_error naming the interface on failure.
#include <string>

namespace netbox::launcher {

void add_ipv4_address(const std::string& ifname, const std::string& address, int prefix);
// Without duplicate address detection (IFA_F_NODAD): the addresses netbox puts on the
// agent's loopback are its own, and a tentative address could not be used at once.
void add_ipv6_address(const std::string& ifname, const std::string& address, int prefix);
void set_link_up(const std::string& ifname);
// `local default dev lo` for AF_INET or AF_INET6: every address is this namespace's own, so
// a connect() to any of them gets a route (and stays inside) for the nat output hook to
// redirect it to the proxy's capture socket; no device leads anywhere.
void add_local_default_route(int family);
// For `netbox gc`: the host-side veth an older launcher (before the socket link) left.
// Returns false when the link did not exist.
bool delete_link(const std::string& ifname);

}  // namespace netbox::launcher
