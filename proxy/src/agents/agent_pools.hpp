#pragma once
// The synthetic pools of the agents attached to one proxy: each agent's inside the proxy's
// synthetic ranges and overlapping no other's, so an address stands for one mapping.
#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include <map>
#include <memory>
#include <string>

namespace netbox::proxy {

class DnsView;
using Views = std::map<boost::asio::ip::address, std::shared_ptr<DnsView>>;

// The checks of a view to be added, its pools as they are, under dns_mu; empty: none.
std::string pools_problem(const AgentAttachment& a, const ProxyOptions& o, const Views& views);
// `a` given pools that overlap no attached agent's (the next free block of its size when
// another holds the one it proposes), or the reason it cannot be. Under dns_mu.
std::string place_pools(AgentAttachment& a, const ProxyOptions& o, const Views& views);

}  // namespace netbox::proxy
