#pragma once
// A connection to a host the profile inspects (issue 16), by any front door: a CONNECT
// (netbox answers 200 first), a SOCKS5 CONNECT (the SOCKS success reply first) or a
// captured connection (nothing first: the agent believes it reached its destination).
// netbox reads the agent's TLS ClientHello, refuses a server name other than the
// admitted host (domain fronting), completes the handshake itself with a leaf minted for the host, and then
// reads the HTTP/1.1 requests inside one by one. Each is decided by the host decision
// the CONNECT got plus `rules` on its canonical path, has an audit row of its own linked
// to the tunnel's (parent), and goes to the upstream over a verified TLS connection,
// pooled per agent, address, host name and trust store (upstream_tls.hpp). Anything but TLS carrying
// HTTP/1.1 is refused with a reason. Upstream connections are pooled per agent, address,
// host name and trust store (upstream_tls.hpp). The tunnel's row is completed when the agent's
// connection ends; its bytes stay 0, since its requests' rows carry them (summing both
// would count every byte twice). An agent's credentials (credentials.hpp) are put into
// the requests to their hosts here, and its placeholders looked for in every other one.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/host.hpp"

#include "agent_tls_stream.hpp"
#include "client_slots.hpp"
#include "denial.hpp"
#include "exchange.hpp"
#include "proxy_runtime.hpp"
#include "request_head.hpp"
#include "upstream_tls.hpp"

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
  Outcome outcome = Outcome::allow;       // the CONNECT's: the default of each request inside
  policy::Decision decision;
  std::string agent, client_addr, metric_label;
  std::shared_ptr<const Tripwire> tripwire;  // the agent's credentials; null: none
  // The host is the name the agent's DNS view answered for the address it dialled (a
  // captured connection): a ClientHello without a server name is decided on it.
  bool name_from_address = false;
};

class InspectedTunnel : public std::enable_shared_from_this<InspectedTunnel> {
 public:
  // A request body inside an inspected tunnel is read whole before it is forwarded (and
  // an answer before it is relayed): at most this much each.
  static constexpr std::uint64_t kBodyLimit = 16ull * 1024 * 1024;

  // `preface`: what the agent is answered before its ClientHello is read (the front
  // door's "connected"; empty for a captured connection). `early`: bytes already read.
  InspectedTunnel(ProxyRuntime& impl, Worker& worker, boost::asio::ip::tcp::socket client, std::string preface,
                  std::string early, Exchange tunnel, InspectionScope scope);
  ~InspectedTunnel();
  void start();

 private:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  void on_established(boost::system::error_code ec);
  void read_hello();
  void on_hello_bytes(boost::system::error_code ec, std::size_t n);
  void check_hello();
  // The tunnel is refused before TLS: a plain-HTTP answer, then close; the row says why.
  void refuse_tunnel(Outcome outcome, const std::string& rule, std::string reason);
  void on_handshake(boost::system::error_code ec);
  void read_request();
  void on_request(boost::beast::error_code ec);
  void refuse_not_http(const std::string& why);
  void forward(std::string path_and_query);
  void on_answer(UpstreamAnswer a);
  void refuse_request(Refusal r, std::string error = {});
  void respond(std::shared_ptr<Response> res, bool close);
  void read_head_bytes();
  void check_head();
  void start_head_deadline();
  void refuse_head();  // 400/414/431 from RequestHeadCheck, as on the plain door
  void read_more();
  void write_more(bool close_after);
  void arm(std::chrono::milliseconds span);  // closes the agent's connection after `span` of silence
  void touch();                              // a piece was read or written
  void wait_idle();
  void close(std::string error = {});
  std::string what() const;

  ProxyRuntime& impl_;
  Worker& worker_;
  boost::asio::ip::tcp::socket client_;  // until the handshake starts; then inside tls_
  std::string preface_;
  std::string hello_;                    // the bytes read to check the ClientHello
  Exchange tunnel_;                      // the CONNECT's row
  Exchange inner_;                       // the current request's row
  InspectionScope scope_;
  std::string pool_scope_;  // UpstreamPool::scope of the agent, for the upstream pool's keys
  boost::asio::steady_timer timer_;
  std::optional<AgentTlsStream> tls_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  RequestHeadCheck head_check_;
  std::shared_ptr<const tls::Leaf> leaf_;
  bool keep_alive_ = true;
  bool head_ = false;
  bool injected_ = false;  // the current request carries a credential's secret
  bool closed_ = false;
  int tunnel_status_ = 200;  // the tunnel row's: 403 when refused before TLS
  std::uint64_t requests_ = 0;
  std::string writing_;  // the answer being written (its capacity reused per request)
  std::size_t written_ = 0;
  std::chrono::milliseconds span_{0};            // the silence arm() allows
  std::chrono::steady_clock::time_point last_;   // the last piece read or written
  std::optional<std::chrono::steady_clock::time_point> head_deadline_;  // a request head began
};

}  // namespace netbox::proxy
