#include "pipeline/agent_connection.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "pipeline/client_identity.hpp"
#include "pipeline/target.hpp"

#include <sys/socket.h>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Refused before a session exists. The HTTP listener writes one short 503 straight to the
// fresh socket (its send buffer is empty, so this never blocks); a SOCKS client has not
// spoken yet and could not read an answer: it is closed; a captured connection, or one to
// the DNS view, is reset, as its agent would see any refused connection.
void refuse_connection(tcp::socket& s, const std::string& reason, DoorKind door) {
  boost::system::error_code ec;
  if (door == DoorKind::capture || door == DoorKind::dns) s.set_option(asio::socket_base::linger(true, 0), ec);
  if (door != DoorKind::http) return s.close(ec);
  const std::string body = "netbox: connection refused: " + reason + "\n";
  const std::string res = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                          "X-Netbox-Decision: cap\r\nX-Netbox-Reason: " + reason + "\r\nRetry-After: 1\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  [[maybe_unused]] const auto sent = ::send(s.native_handle(), res.data(), res.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  s.shutdown(tcp::socket::shutdown_send, ec);
  s.close(ec);
}

}  // namespace

void AgentConnection::bind(Admission& admission, Exchange& exchange) const {
  admission.bind(*policy, *profile, who);
  admission.door(door_name(door));
  admission.client(client_fd);
  bind(exchange);
}

void AgentConnection::bind(Exchange& exchange) const {
  exchange.connection(who.agent, peer_text, metric_label, who.origin);
}

void AgentConnection::become(AgentIdentity next, const DoorServices& rt) {
  who = std::move(next);
  profile = who.profile.empty() ? &policy->base : &policy->profile_for(who.profile);
  metric_label = rt.metric_label(who);
}

std::optional<ClientSlot> take_client_slot(DoorServices& rt, tcp::socket& s, DoorKind door, bool answer) {
  boost::system::error_code peer_ec;
  const auto peer = s.remote_endpoint(peer_ec);
  ClientSlotResult slot;
  if (peer_ec) slot.reason = "the connection is gone: " + peer_ec.message();
  else slot = acquire_client_slot(rt, s, peer.address());
  if (!slot.slot) {
    rt.counters.client_connections_refused.fetch_add(1);
    if (rt.refused_log.note())
      rt.log.write(log_event::connection_refused, {{log_key::client, peer_ec ? std::string() : endpoint_text(peer)},
                                                   {log_key::door, door_name(door)},
                                                   {log_key::reason, slot.reason},
                                                   {log_key::count, rt.refused_log.take()}});
    if (answer) refuse_connection(s, slot.reason, door);
    return std::nullopt;
  }
  boost::system::error_code ignored;
  s.set_option(tcp::no_delay(true), ignored);  // see dialer.cpp: Nagle + delayed ACK
  return std::move(slot.slot);
}

std::optional<AgentConnection> identify_connection(DoorServices& rt, tcp::socket& s, ClientSlot slot, DoorKind door) {
  auto who = identify_client(rt, s, door_name(door));
  if (!who) return std::nullopt;  // on an agent's own listener, from none of its addresses
  AgentConnection c;
  c.slot = std::move(slot);
  c.door = door;
  c.client_fd = s.native_handle();
  boost::system::error_code ec;
  c.peer = s.remote_endpoint(ec);
  if (!ec) c.peer_text = authority(canonical_address(c.peer.address()).to_string(), c.peer.port());
  c.who = std::move(*who);
  c.policy = rt.current_policy();
  c.become(std::move(c.who), rt);
  return c;
}

}  // namespace netbox::proxy
