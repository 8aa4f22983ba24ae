#pragma once
// nftables rules (libnftables) that leave the proxy as the agent's only way out.
#include "netbox/launcher/proxy_ports.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// Inside the agent's namespace when it reaches the proxy through sockets made there
// (agent_link.hpp): output to loopback only; with `ports.capture`, every TCP connection to
// another address is redirected to the capture socket and DNS (UDP and TCP port 53, IPv4)
// to `dns_addr`:53, the DNS view's sockets; everything else is refused at once.
void install_link_rules(const ProxyPorts& ports, const std::string& dns_addr);

// For `netbox gc`: the host table `inet netbox_<veth>` an older launcher (before the
// socket link) installed for its agent's veth, and did not remove because it was killed.
// Returns false when the table did not exist.
bool remove_host_rules(const std::string& veth);
std::string host_table_name(const std::string& veth);
// Names of `inet` tables whose name starts with "netbox_nbx".
std::vector<std::string> list_host_tables();

}  // namespace netbox::launcher
