#pragma once
// A launched agent's row in the audit store (the agents table), opened the same way
// whichever way it attached: by its sockets (AgentSlot) or by its address
// (address_attachment.cpp).
#include "netbox/proxy/agent_attachment.hpp"

#include <string>

namespace netbox::proxy {

struct ProxyRuntime;

// Opens the row of `attached` for `launch`; `address` is what the row records as the
// agent's address (empty for an agent known by its sockets). Marks `attached` as having
// a row, so its detach closes it.
void open_agent_row(ProxyRuntime& core, const AgentLaunch& launch, std::string address, AttachedAgent& attached);

}  // namespace netbox::proxy
