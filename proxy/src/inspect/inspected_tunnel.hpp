#pragma once
// A connection to a host the profile inspects (issue 16), by any front door: a CONNECT
// (netbox answers 200 first), a SOCKS5 CONNECT (the SOCKS success reply first) or a
// captured connection (nothing first: the agent believes it reached its destination).
// This is the TLS front part: netbox reads the agent's TLS ClientHello, refuses a server
// name other than the admitted host (domain fronting) and anything but TLS, and completes
// the handshake itself with a leaf minted for the host. Then it hands the agent's TLS
// stream to the request loop every HTTP door runs (http_session.hpp, an InspectedSession
// with a FixedDestination): each request inside is decided by the host decision the
// connection got plus `rules` on its canonical path, has an audit row of its own linked
// to the tunnel's (parent), and goes to the upstream over a verified TLS connection
// (upstream_link.hpp), its bodies streaming both ways. The tunnel's row is completed when
// the agent's connection ends; its bytes stay 0, since its requests' rows carry them
// (summing both would count every byte twice).
#include "netbox/policy/decision.hpp"
#include "netbox/policy/host.hpp"

#include "pipeline/agent_connection.hpp"
#include "inspect/agent_tls_stream.hpp"
#include "pipeline/client_slots.hpp"
#include "pipeline/denial.hpp"
#include "pipeline/exchange.hpp"
#include "inspect/inspector.hpp"
#include "base/door_services.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::proxy {

// What the tunnel takes over from the session that admitted its CONNECT.
struct InspectionScope {
  PolicyPtr policy;                       // keeps *profile alive
  const policy::Profile* profile = nullptr;
  policy::Host host;
  std::uint16_t port = 0;
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // the addresses admission let through
  policy::Decision decision;              // the connection's: the default of each request inside
  std::string agent, client_addr, metric_label;
  std::shared_ptr<const Tripwire> tripwire;  // the agent's credentials; null: none
  // The host is the name the agent's DNS view answered for the address it dialled (a
  // captured connection): a ClientHello without a server name is decided on it.
  bool name_from_address = false;

  // What connection `c`, admitted to host:port with `decision`, hands over.
  static InspectionScope of(const AgentConnection& c, policy::Host host, std::uint16_t port,
                            std::vector<boost::asio::ip::tcp::endpoint> endpoints, policy::Decision decision,
                            bool name_from_address = false) {
    return {c.policy, c.profile, std::move(host), port, std::move(endpoints), std::move(decision),
            c.who.agent, c.peer_text, c.metric_label, c.who.tripwire, name_from_address};
  }
};

class InspectedTunnel : public std::enable_shared_from_this<InspectedTunnel> {
 public:
  // `preface`: what the agent is answered before its ClientHello is read (the front
  // door's "connected"; empty for a captured connection). `early`: bytes already read.
  InspectedTunnel(DoorServices& impl, Worker& worker, boost::asio::ip::tcp::socket client, std::string preface,
                  std::string early, Exchange tunnel, InspectionScope scope);
  ~InspectedTunnel();
  void start();

 private:
  void on_established(boost::system::error_code ec);
  void read_hello();
  void on_hello_bytes(boost::system::error_code ec, std::size_t n);
  void check_hello();
  void start_handshake();
  // The tunnel is refused before TLS: a plain-HTTP answer, then close; the row says why.
  void refuse_tunnel(const policy::Decision& no);
  void on_handshake(boost::system::error_code ec);
  void close(std::string error = {});

  DoorServices& impl_;
  Worker& worker_;
  boost::asio::ip::tcp::socket client_;  // until the handshake starts; then inside tls_
  std::string preface_;
  std::string hello_;                    // the bytes read to check the ClientHello
  Exchange tunnel_;                      // the connection's row
  InspectionScope scope_;
  boost::asio::steady_timer timer_;      // the ClientHello and the handshake: header_timeout
  std::optional<AgentTlsStream> tls_;
  std::shared_ptr<const tls::Leaf> leaf_;
  bool closed_ = false;
  int tunnel_status_ = 200;  // the tunnel row's: 403 when refused before TLS
};

}  // namespace netbox::proxy
