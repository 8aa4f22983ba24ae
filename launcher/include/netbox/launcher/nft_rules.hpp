#pragma once
// nftables rules (libnftables) that leave the proxy as the agent's only way out.
#include "netbox/launcher/proxy_ports.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// Inside the agent's namespace: output accepts loopback and TCP to the proxy's ports only;
// everything else is rejected at once (TCP reset / ICMP admin-prohibited).
void install_agent_rules(const std::string& proxy_addr, const ProxyPorts& ports);

// On the host: table `inet netbox_<veth>` accepting from the veth only TCP to the
// proxy address and ports, rejecting other input from it and dropping its forwarding.
void install_host_rules(const std::string& veth, const std::string& proxy_addr, const ProxyPorts& ports);
// Returns false when the table did not exist.
bool remove_host_rules(const std::string& veth);
std::string host_table_name(const std::string& veth);
// Names of `inet` tables whose name starts with "netbox_nbx".
std::vector<std::string> list_host_tables();

}  // namespace netbox::launcher
