#pragma once
// The parts of attaching an agent known by its address (ProxyRuntime::attach_by_address,
// agent_attach.cpp): the checks of what a launcher asks for, the listeners, the DNS view
// with its capture listeners (the agent's row: agents/agent_row.hpp).
#include "netbox/proxy/agent_attachment.hpp"

#include "base/proxy_runtime.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <string>

namespace netbox::proxy {

// Throws std::invalid_argument naming the key: an address outside the launch pool, taken,
// or not plain; a profile the policy lacks. Places the agent's DNS pools (`a` may change).
void check_address_attachment(ProxyRuntime& core, AgentAttachment& a);
// The listener on `ep`: the proxy's own when it has one there (`added` false), else a new one.
boost::asio::ip::tcp::endpoint open_listener(ProxyRuntime& core, const boost::asio::ip::tcp::endpoint& ep,
                                             ListenerKind kind, bool& added);
// The agent's DNS view on its listener's address, and its capture listeners (IPv4, and
// IPv6 on the same port); recorded in `attached`. Throws, leaving nothing started.
void attach_dns_view(ProxyRuntime& core, const AgentAttachment& a, AttachedAgent& attached);
std::string profile_missing(const std::string& profile, const std::string& agent);

}  // namespace netbox::proxy
