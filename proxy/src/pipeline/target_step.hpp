#pragma once
// The step every door's adapter hands its target to (issue 23, item 1): once the HTTP
// listener has read a CONNECT, SOCKS5 its request, or a captured connection its original
// destination (and first message), the rest is the same for all three, written here once:
//
//   decide (admission_steps.hpp) → open_row → one of
//     the HTTP loop      plain HTTP: ClientSession with a FixedDestination, each request
//                        decided with `rules`, one row each under the connection's
//     an InspectedTunnel the profile inspects host:port (never a blind tunnel instead)
//     a Tunnel           anything else, dialled first; a blind tunnel to a host some `rules`
//                        entry names, or TLS naming another host (fronting), is refused
//     a refusal          the row says why; the agent is answered the door's way
//
// A door supplies only how it answers (DoorAnswer): what netbox says once the upstream is
// there (CONNECT's 200, SOCKS5 "succeeded"; nothing on a captured connection, whose agent
// believes it reached its destination) and what a refusal before that is told (an HTTP
// answer to a CONNECT and to plain HTTP, a SOCKS reply code; nothing: a reset). After the
// door's "connected" a refusal is a reset. The agent's first message is read before
// deciding when the door knows it then (a captured connection), else after "connected"
// (CONNECT, SOCKS5: the protocol answers first). A CONNECT's bytes are opaque by its
// protocol (DoorTarget::opaque): its tunnel is decided before its 200, so a blind tunnel
// to a host `rules` name gets a 403 with the reason, and its plain HTTP is relayed unread
// (checked for fronting only), as a TLS tunnel's bytes are; SOCKS5 and a captured
// connection say nothing of theirs, so their plain HTTP goes to the request loop.
#include "doors/first_flight.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/agent_connection.hpp"
#include "pipeline/exchange.hpp"
#include "upstream/dialer.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::proxy {

// Why a connection is refused, as a door needs it to choose its answer.
struct Snag {
  const Refusal& refusal;
  DialFailure dial = DialFailure::none;  // the dial failed (refused, timed out ...)
  bool unresolved = false;               // the name did not resolve
};

struct DoorAnswer {
  std::string connected;  // sent once the upstream is there, before the agent's bytes; may be empty
  // What a refusal before `connected` is told, then the connection closes; empty: a reset.
  std::function<std::string(const Snag&)> refused;
};

// The answer of a door that speaks HTTP before "connected" (a CONNECT, plain HTTP on a
// captured connection): a refusal is what every proxied request gets, a status with
// X-Netbox-Decision and X-Netbox-Reason (denial.hpp), then the close.
DoorAnswer http_answer(std::string connected, unsigned version = 11);

// What the door's adapter read: where the agent wants to go, and what it sent so far.
struct DoorTarget {
  std::string kind;  // FixedDestination::kind: "socks", "transparent" (an opaque one has none)
  policy::Host host;
  std::uint16_t port = 0;
  std::string what;  // "CONNECT host:port", for refusals
  // The agent's first message, when the door read it before deciding (a captured
  // connection; its bytes go first once admitted); nullopt: it is read after `connected`,
  // with `early` (bytes the agent sent before any answer) as its start.
  std::optional<FirstFlight> flight;
  std::string early;
  std::string as;  // what the host is to the fronting check: "the host the CONNECT request named"
  bool name_from_address = false;  // InspectionScope::name_from_address
  std::shared_ptr<void> hold;      // kept while this step runs (a DNS view's synthetic address)
  bool opaque = false;  // the door's protocol says its bytes are a tunnel's (CONNECT), whatever they look like
};

class TargetStep : public std::enable_shared_from_this<TargetStep> {
 public:
  // `exchange` has begun (its request, kind and target noted); `conn` is the door's.
  TargetStep(DoorServices& rt, Worker& worker, boost::asio::ip::tcp::socket client, AgentConnection conn,
             Exchange exchange, DoorTarget target, DoorAnswer answer);
  ~TargetStep();
  void start();

 private:
  bool plain_http() const { return target_.flight && target_.flight->kind == FirstFlight::Kind::http; }
  void act_on(AdmissionResult result);
  void go_on();  // the row is open
  void on_dialed(DialResult r);
  void send_connected();
  void on_first_flight(FirstFlight f);  // read after `connected`
  void start_requests();
  void start_inspection();
  void start_tunnel(boost::asio::ip::tcp::socket upstream, std::string first);
  void refuse(const Refusal& r, std::string error, DialFailure dial = DialFailure::none, bool unresolved = false);
  void answer(const Snag& s);  // the door's answer to a refusal, then close (or a reset)
  void close();
  void reset();

  DoorServices& rt_;
  Worker& worker_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::steady_timer timer_;  // the first flight's waits, a refusal's write
  AgentConnection conn_;
  Admission admission_;
  Exchange exchange_;
  DoorTarget target_;
  DoorAnswer answer_;
  std::vector<boost::asio::ip::tcp::endpoint> allowed_;
  policy::Decision decided_;
  std::optional<DialResult> dialled_;  // the upstream, until the first flight says what it carries
  std::string out_;  // what is being written to the agent
};

}  // namespace netbox::proxy
