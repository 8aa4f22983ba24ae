#pragma once
// One agent connection: the client side of the request path. It reads request heads
// (checked by RequestHeadCheck, then Beast's parser under the limits of request_head.hpp),
// runs the keep-alive loop, writes refusals and closes or resets the connection
// (http_session.cpp). Each request is decided on its head alone by Admission
// (admission.hpp), whose only wait, a DNS lookup, the session runs; its row is the
// Exchange's (exchange.hpp). An admitted request goes out over a pooled or dialled
// upstream connection, its body relayed piece by piece (64 KiB at most in memory per
// connection) and the answer relayed back by ResponseRelay (response_relay.hpp), or a
// CONNECT becomes a Tunnel (forwarding.cpp). A refused request's body is never read, and
// its connection is closed. The parts are members: no allocation per request for them.
#include "netbox/policy/decide.hpp"
#include "netbox/proxy/server.hpp"

#include "admission.hpp"
#include "agent_registry.hpp"
#include "denial.hpp"
#include "dialer.hpp"
#include "exchange.hpp"
#include "inspected_tunnel.hpp"
#include "request_head.hpp"
#include "response_relay.hpp"
#include "proxy_runtime.hpp"
#include "target.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <memory>
#include <optional>

namespace netbox::proxy {

// A captured or SOCKS5 connection that carries plain HTTP (transparent_session.hpp): its
// destination was admitted once, as a connection, and it has that connection's row. Each
// request inside is read, decided with `rules` and forwarded by the same loop as a
// proxied request, to the admitted addresses; its row (kind `kind`) links to the
// connection's. The target is origin-form and the Host header must name the admitted
// host (unless it is an IP literal, which has no name to disagree with).
struct FixedDestination {
  std::string kind;    // "transparent" or "socks"
  InspectionScope scope;
  Exchange connection;
  std::string early;   // bytes already read from the agent
  std::optional<DialResult> dialled;  // an upstream connection already made, for the first request
};

class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  static constexpr std::size_t kHeaderLimit = proxy::kHeaderLimit;
  static constexpr std::uint64_t kRequestBodyLimit = proxy::kRequestBodyLimit;
  static constexpr std::uint64_t kResponseBodyLimit = 1024ull * 1024 * 1024;
  // linger_close drops at most this much, for at most this long, then closes.
  static constexpr std::size_t kLingerBytes = 1024 * 1024;
  static constexpr std::chrono::seconds kLingerTime{2};

  ClientSession(ProxyRuntime& impl, Worker& worker, boost::asio::ip::tcp::socket socket, ClientSlot slot);
  ClientSession(ProxyRuntime& impl, Worker& worker, boost::asio::ip::tcp::socket socket, ClientSlot slot,
                FixedDestination fixed);
  ~ClientSession();
  void start();

 private:
  using Request = boost::beast::http::request_header<>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  void read_request();
  void read_head_bytes(bool first);
  void on_head_bytes(bool first, boost::beast::error_code ec, std::size_t bytes);
  void check_head();
  void refuse_head(const HeadProblem& p);  // 400/414/431 from RequestHeadCheck: nothing is forwarded
  void note_target(std::string_view target, bool connect);
  void note_request(bool connect, std::string_view method, bool escape = false);  // the row's method and kind
  void take_fixed_target();  // a request on a FixedDestination connection
  bool tripped();            // the tripwire refused the request (answered and recorded)
  void take_head(boost::beast::error_code ec);  // the head is parsed (or failed): check it, then admit
  void admit();
  void act_on(AdmissionResult result);  // refuse, or open the exchange and forward
  std::optional<Refused> apply_request_rules(Admitted& yes);  // `rules`, once the host is let through
  void forward();  // after admit (and, with --audit-sync, once the row is durable)
  void refuse_unaudited(std::string why);  // 503: the audit store did not take the row (open_row)
  void connect_upstream();
  void on_dialed(DialResult r);
  void send_upstream();
  void send_continue();  // "100 Continue" to an agent that waits for it, once admitted
  void read_request_piece();
  void request_piece(boost::beast::error_code ec);
  void send_request_piece(std::size_t got);
  void on_upstream_written(boost::beast::error_code ec, std::size_t bytes);
  void request_body_failed(boost::beast::error_code ec);
  void refuse_body(Refusal r);
  bool may_resend() const;
  void relay_response();
  void on_relayed(RelayResult r);
  void start_tunnel(boost::asio::ip::tcp::socket upstream);
  void start_inspection();  // an admitted CONNECT to an inspected host (inspected_tunnel.hpp)

  // Answers without forwarding; the exchange writes (or completes, as error) the row.
  void refuse(Refusal r, bool close, std::string error = {});
  void upstream_failed(unsigned status, std::string error);
  void on_refusal_written(bool close, boost::beast::error_code ec);
  void close_client();
  // After a refusal that left a request body unread: end the sending side and read (and
  // drop) what the agent still sends for a short while, so that closing does not reset
  // the connection before the agent has read the refusal.
  void linger_close();
  void on_linger(boost::beast::error_code ec, std::size_t bytes);
  // After part of a response went out: reset the agent's connection, so that a response
  // cut short can never pass for a complete one (even one delimited by close).
  void abort_client();

  bool body_unread() const;        // an admitted or refused request's body is still in the socket
  std::string not_resent() const;  // why a request was not sent again, for a reason
  bool is_connect() const;
  std::string what() const;

  ProxyRuntime& impl_;
  Worker& worker_;
  ClientSlot slot_;  // this agent connection's place under the connection caps
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<StreamingRequestParser> parser_;
  RequestHeadCheck head_check_;
  std::chrono::steady_clock::time_point head_deadline_;  // first byte + header_timeout
  boost::asio::ip::tcp::endpoint peer_;
  std::string peer_text_;
  AgentIdentity who_;
  PolicyPtr policy_;
  const policy::Profile* profile_ = nullptr;

  // The current request.
  Request req_;
  Target target_;
  policy::Host host_;
  Admission admission_;
  Exchange exchange_;  // the current request's row
  std::vector<boost::asio::ip::tcp::endpoint> allowed_;
  Outcome decided_outcome_ = Outcome::allow;  // admission's, for an inspected tunnel
  policy::Decision decided_;
  bool client_keep_alive_ = false;
  bool reused_upstream_ = false;
  // The request body, relayed in pieces through pieces_ before the response is read.
  bool request_had_body_ = false;  // one was announced (Content-Length > 0 or chunked)
  bool body_started_ = false;      // some was taken from the agent: the request cannot be resent
  bool body_chunked_ = false;      // it goes upstream chunked (the agent sent it chunked)
  bool expect_continue_ = false;   // the agent waits for "100 Continue" before sending it
  bool request_head_pending_ = false;  // the forwarded head is in out_, to go with the first piece
  bool last_piece_up_ = false;
  std::size_t piece_up_ = 0;
  // For an agent with credentials, the first piece is filled (up to 64 KiB, or the whole
  // body) before the head goes, so the tripwire sees it whole: what it holds so far.
  std::size_t held_ = 0;       // body bytes in the piece being written upstream
  std::size_t linger_left_ = 0;    // bytes linger_close still drops before closing
  std::string pool_scope_;         // UpstreamPool::scope of this agent connection
  std::string pool_key_;
  std::optional<boost::beast::tcp_stream> upstream_;
  // The request head and chunk framing on their way upstream (head_writer.hpp); kept
  // across requests so its capacity is reused.
  std::string out_;
  PieceBuffer pieces_;   // body pieces, request then response
  ResponseRelay relay_;  // the upstream's answer, to the agent
  std::shared_ptr<void> refusal_;  // keeps a refusal message alive while it is written
  std::optional<FixedDestination> fixed_;
};

}  // namespace netbox::proxy
