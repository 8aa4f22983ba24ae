#pragma once
// nftables rules (libnftables) that leave the proxy as the agent's only way out.
#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// Inside the agent's namespace: output accepts loopback and TCP to the proxy only (and,
// with `dns`, UDP and TCP port 53 on the proxy address: the DNS view); everything else is
// rejected at once (TCP reset / ICMP admin-prohibited), other UDP and QUIC included.
// With `capture_port` (nonzero), every other outgoing TCP connection is DNATed to
// proxy_addr:capture_port (table `ip netbox_capture`), where the proxy recovers its
// original destination (transparent capture).
void install_agent_rules(const std::string& proxy_addr, std::uint16_t proxy_port, bool dns = false,
                         std::uint16_t capture_port = 0);

// On the host: table `inet netbox_<veth>` accepting from the veth only TCP to the
// proxy address and port (and with `dns` UDP and TCP port 53 on it), rejecting other input from it and dropping its forwarding.
void install_host_rules(const std::string& veth, const std::string& proxy_addr, std::uint16_t proxy_port,
                        bool dns = false, std::uint16_t capture_port = 0);
// Returns false when the table did not exist.
bool remove_host_rules(const std::string& veth);
std::string host_table_name(const std::string& veth);
// Names of `inet` tables whose name starts with "netbox_nbx".
std::vector<std::string> list_host_tables();

}  // namespace netbox::launcher
