#pragma once
// One agent connection as every door holds it (issue 23, item 1), built in one place, so
// that what applies to every connection is written once: its place under the connection
// caps, back pressure from the audit writer, who the agent is, and the policy snapshot and
// profile that decide it. The pipeline, for every door:
//
//   accept_with_backoff (accept_loop.hpp)     every listener: EMFILE pause, accept_error
//   take_client_slot                          the connection caps; a refusal the door's way
//   open_agent_connection                     audit room → identity → policy → profile
//   the door's adapter                        its own first bytes → a target (host, port)
//   decide → open_row → dial                  admission_steps.hpp; for a CONNECT, SOCKS5
//                                             and capture all of it, and what follows, in
//                                             TargetStep; for a forwarded request, the loop
//   Tunnel | InspectedTunnel | HttpSession | a refusal   (target_step.hpp)
//
// The doors' adapters: the HTTP listener's request loop (http_session.hpp), SOCKS5
// (socks_session.hpp), a captured connection (transparent_session.hpp). The DNS view's
// TCP side (dns_tcp.cpp) takes the accept loop and the client slot; it decides names
// only (DnsView::answer), so it opens no AgentConnection.
#include "pipeline/admission.hpp"
#include "agents/agent_registry.hpp"
#include "pipeline/audit_room.hpp"
#include "pipeline/client_slots.hpp"
#include "pipeline/exchange.hpp"
#include "base/door_services.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace netbox::proxy {

// Which door accepted the connection: how a refused one is answered and what log lines
// and rows call it.
enum class DoorKind { http, socks, capture, dns };

constexpr std::string_view door_name(DoorKind d) {
  return d == DoorKind::http ? "http" : d == DoorKind::socks ? "socks" : d == DoorKind::capture ? "capture" : "dns";
}

struct AgentConnection {
  ClientSlot slot;  // its place under the connection caps; a tunnel's row carries it on
  boost::asio::ip::tcp::endpoint peer;
  std::string peer_text;  // the peer as rows and log lines show it
  AgentIdentity who;
  // The client token it showed, if any (client_tokens.hpp): HTTP checks it again before
  // each later request on the connection, so a revoked one stops there.
  std::optional<ClientTokens::Held> token;
  std::optional<ClientCerts::Held> cert;  // likewise the client certificate it showed (client_certs.hpp)
  // The policy in force when the connection was opened decides all of it: a reload
  // applies to new connections. `profile` is the agent's, inside *policy.
  PolicyPtr policy;
  const policy::Profile* profile = nullptr;
  std::string metric_label;  // DoorServices::metric_label(who)
  DoorKind door = DoorKind::http;
  int client_fd = -1;  // the agent's socket (the door owns it), for Admission::client

  // A door's Admission and its row belong to this connection.
  void bind(Admission& admission, Exchange& exchange) const;
  void bind(Exchange& exchange) const;  // a row before any admission (a door's handshake)
  // The connection is `who` after all (a client token it showed, client_tokens.hpp): its
  // profile and label follow, under the same policy snapshot. Bind again afterwards.
  void become(AgentIdentity who, const DoorServices& rt);
};

// The client slot of a connection just accepted (client_identity.hpp: per agent). Nullopt:
// a limit was hit; counted, logged (`connection_refused`, rate-limited) and answered the
// door's way: a 503 on the HTTP listener, a close on SOCKS5, a reset on a captured
// connection or the DNS view's TCP side. With `answer` false, a refused `s` is left open
// for the door to answer (the TLS listener's alert, tls_door.hpp).
std::optional<ClientSlot> take_client_slot(DoorServices& rt, boost::asio::ip::tcp::socket& s, DoorKind door,
                                           bool answer = true);

// Who the connection on `s` is, under the policy in force now. Nullopt: refused and `s`
// reset (identify_client: an agent's own listener, from none of its addresses).
std::optional<AgentConnection> identify_connection(DoorServices& rt, boost::asio::ip::tcp::socket& s, ClientSlot slot,
                                                   DoorKind door);

// Opens the connection on `s` once the audit writer has room (back pressure for every
// door: while its queue is full nothing more is read from the agent, and no row is lost),
// then `then(AgentConnection)` on the socket's executor. A refused connection is reset and
// `then` is not called. `s` and `slot` belong to the door, which `then` keeps alive.
template <class Then>
void open_agent_connection(DoorServices& rt, boost::asio::ip::tcp::socket& s, ClientSlot& slot, DoorKind door,
                           Then then) {
  if (!audit_room_or_wait(*rt.writer, s.get_executor(),
                          [&rt, &s, &slot, door, then] { open_agent_connection(rt, s, slot, door, then); }))
    return;
  if (auto c = identify_connection(rt, s, std::move(slot), door)) then(std::move(*c));
}

}  // namespace netbox::proxy
