#pragma once
// Which agent a client connection is, from the listener it arrived on and its source
// (AgentRegistry::identify), for every door that accepts agents' connections.
#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "agents/agent_registry.hpp"
#include "pipeline/client_slots.hpp"

namespace netbox::proxy {

struct DoorServices;

// The identity of the connection on `s`. Nullopt: refused, and `s` closed (reset): it
// arrived on an agent's own listener from an address not registered for that agent (or
// its addresses could not be read). Such a connection is nobody's: it is never decided,
// and never recorded as `anonymous`.
std::optional<AgentIdentity> identify_client(DoorServices& rt, boost::asio::ip::tcp::socket& s, std::string_view door);

// The client slot of a connection just accepted on `s` from `peer` (ClientSlots): per agent,
// an agent known by its sockets under its key (netns_key), any other under its address.
ClientSlotResult acquire_client_slot(DoorServices& rt, boost::asio::ip::tcp::socket& s,
                                     const boost::asio::ip::address& peer);

// Counts a packet or connection from a foreign source on an agent's own listener and logs
// it (`foreign_source_refused`, once a second at most, with the count since the last line).
void note_foreign_source(DoorServices& rt, std::string_view door, const std::string& local, const std::string& peer);

}  // namespace netbox::proxy
