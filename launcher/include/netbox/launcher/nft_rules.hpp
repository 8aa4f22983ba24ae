#pragma once
// nftables rules (libnftables) that leave the proxy as the agent's only way out.
#include "netbox/launcher/proxy_ports.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// Inside the agent's namespace: output accepts loopback and TCP to the proxy's ports only
// (and, with `dns`, UDP and TCP port 53 on the proxy address: the DNS view); everything
// else is rejected at once (TCP reset / ICMP admin-prohibited), other UDP and QUIC
// included. With `ports.capture`, every outgoing TCP connection leaves for the host side,
// whose rules DNAT it to the proxy's capture listener (transparent capture).
// `proxy_addr6` (IPv6 on the link; empty: none): with capture, IPv6 TCP leaves for the host
// side too, and neighbour discovery with it; other IPv6 is rejected like IPv4.
void install_agent_rules(const std::string& proxy_addr, const ProxyPorts& ports, bool dns = false,
                         const std::string& proxy_addr6 = "");

// Inside the agent's namespace when it reaches the proxy through sockets made there
// (agent_link.hpp): output to loopback only; with `ports.capture`, every TCP connection to
// another address is redirected to the capture socket and DNS (UDP and TCP port 53, IPv4)
// to `dns_addr`:53, the DNS view's sockets; everything else is refused at once.
void install_link_rules(const ProxyPorts& ports, const std::string& dns_addr);

// On the host: table `inet netbox_<veth>` accepting from the veth only TCP to the proxy
// address and ports (and with `dns` UDP and TCP port 53 on it), rejecting other input from
// it and dropping its forwarding; with `ports.capture`, a prerouting chain DNATs every
// other TCP connection from the veth to link.host:capture.
// With `link.host6`, the twin for IPv6: only the capture port on it is accepted (after
// the DNAT of every other IPv6 TCP connection to [link.host6]:capture), and neighbour
// discovery; every other service of the host on any IPv6 address stays closed.
// Before all of it: from the veth only the agent's own addresses (`link.agent`, and
// `link.agent6` with IPv6) and neighbour discovery; every other source is refused (and
// counted in the table's foreign_source chain: a link-local one with ICMPv6
// admin-prohibited, any other dropped), so nothing from the link passes as another client.
struct LinkAddresses {
  std::string agent, host;    // IPv4: the agent's address and the host side's (the proxy's)
  std::string agent6, host6;  // IPv6 on the link; empty: none
};
void install_host_rules(const std::string& veth, const LinkAddresses& link, const ProxyPorts& ports,
                        bool dns = false);
// Returns false when the table did not exist.
bool remove_host_rules(const std::string& veth);
std::string host_table_name(const std::string& veth);
// Names of `inet` tables whose name starts with "netbox_nbx".
std::vector<std::string> list_host_tables();

}  // namespace netbox::launcher
