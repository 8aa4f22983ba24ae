#pragma once
// One agent connection carrying HTTP/1.1, plain or inside an inspected connection's TLS:
// one request loop over both (Beast's advanced flex server is the model: one session
// template over the two streams). It reads request heads (checked by RequestHeadCheck,
// then Beast's parser under the limits of request_head.hpp), runs the keep-alive loop,
// writes refusals and closes or resets the connection (http_session_heads.ipp). Each
// request is decided on its head alone: by Admission (admission.hpp), whose only wait, a
// DNS lookup, the session runs, or, on a connection whose destination was admitted once
// (FixedDestination: a captured or SOCKS5 connection, an inspected one), by that
// admission and `rules` (http_session_decide.ipp); its row is the Exchange's. An admitted
// request goes out over a pooled or new upstream connection (plain, or TLS verified
// against the trust store: upstream_link.hpp), its body relayed by RequestRelay and the
// answer by ResponseRelay, both streaming (64 KiB at most in memory per connection); or a
// CONNECT's target goes to TargetStep (target_step.hpp), as SOCKS5's and a captured
// connection's do, whose InspectedTunnel hands the agent's TLS stream back to this loop
// (FixedDestination); or a WebSocket handshake answered 101 turns the
// connection into an UpgradedRelay, its bytes counted in the handshake's row (any other
// Upgrade is refused: upgraded_request.hpp). A refused request's body is never read, and
// its connection is closed. The parts are members: no allocation per request for them.
// An agent's credentials (credentials.hpp) go into requests to their hosts inside TLS,
// and the answers are searched for the secret; their placeholders are looked for in
// every request of every path (the tripwire).
#include "netbox/policy/decide.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include "pipeline/admission.hpp"
#include "pipeline/agent_connection.hpp"
#include "agents/agent_registry.hpp"
#include "inspect/agent_tls_stream.hpp"
#include "pipeline/denial.hpp"
#include "upstream/dialer.hpp"
#include "pipeline/exchange.hpp"
#include "inspect/inspected_tunnel.hpp"
#include "http/request_head.hpp"
#include "http/request_relay.hpp"
#include "http/response_relay.hpp"
#include "base/door_services.hpp"
#include "pipeline/target.hpp"
#include "http/upgraded_relay.hpp"
#include "upstream/upstream_link.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/string_body.hpp>

#include <memory>
#include <optional>
#include <type_traits>

namespace netbox::proxy {

// A connection whose destination was admitted once, as a connection, with that
// connection's row: a captured or SOCKS5 one carrying plain HTTP (target_step.hpp),
// or an inspected one (inspected_tunnel.hpp). Each request inside is read, decided with
// `rules` and forwarded by the same loop as a proxied request, to the admitted
// addresses; its row (kind `kind`) links to the connection's. The target is origin-form
// and the Host header must name the admitted host (unless it is an IP literal, which has
// no name to disagree with).
struct FixedDestination {
  std::string kind;    // "transparent", "socks", or "http" inside an inspected connection
  InspectionScope scope;
  Exchange connection;
  std::string early;   // bytes already read from the agent
  std::optional<DialResult> dialled;  // an upstream connection already made, for the first request
};

// What stays fixed for the life of the agent's connection: the connection the door opened
// (agent_connection.hpp), and what the loop keeps of it.
struct SessionLink : AgentConnection {
  std::string pool_scope;  // UpstreamPool::scope of this agent connection; empty: no pooling
  std::optional<FixedDestination> fixed;
  std::uint64_t requests = 0;  // heads read; the first one shows what an inspected connection carries
  bool identity_settled = false;  // a client token was asked for (or not needed): identity is fixed
  // A TLS listener's connection (tls_door.hpp): its socket is the loop's end of a local
  // pair, so its peer is the door's, never asked of the socket.
  bool bridged = false;
  std::optional<policy::Decision> refused_identity;  // its certificate was refused: 407, rule client_cert
};

// The current request: one value, reset by one assignment when the next one begins
// (Envoy's ActiveStream lifetime), so nothing of one request leaks into the next.
struct ActiveRequest {
  boost::beast::http::request_header<> req;
  Target target;
  policy::Host host;
  std::vector<boost::asio::ip::tcp::endpoint> allowed;
  RequestHeadCheck head_check;
  std::chrono::steady_clock::time_point head_deadline;  // first byte + header_timeout
  std::string pool_key;
  std::optional<AnswerRedaction> redaction;  // a credential went into it
  const policy::RequestRule* body_rule = nullptr;  // the rule that let it through checks its body
  std::optional<BodyGate> gate;                    // that check, while the body is relayed
  std::size_t linger_left = 0;  // bytes linger_close still drops before closing
  bool keep_alive = false;      // the agent's connection may carry another request
  bool reused_upstream = false;
  bool had_body = false;        // one was announced (Content-Length > 0 or chunked)
  bool expect_continue = false;
  bool upgrade = false;         // a WebSocket handshake: a 101 switches the connection to a relay
};

template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::beast::tcp_stream>;
  using Link = UpstreamLink<kTls>;
  static constexpr std::uint64_t kResponseBodyLimit = 1024ull * 1024 * 1024;
  // linger_close drops at most this much, for at most this long, then closes.
  static constexpr std::size_t kLingerBytes = 1024 * 1024;
  static constexpr std::chrono::seconds kLingerTime{2};

  // The HTTP listener's connection: the session opens it (open_agent_connection).
  HttpSession(DoorServices& impl, Worker& worker, boost::asio::ip::tcp::socket socket, ClientSlot slot)
    requires(!kTls);
  // Plain HTTP on a captured or SOCKS5 connection its door opened and admitted.
  HttpSession(DoorServices& impl, Worker& worker, boost::asio::ip::tcp::socket socket, AgentConnection connection,
              FixedDestination fixed)
    requires(!kTls);
  // A TLS listener's connection, opened by its door (tls_door.hpp), over the plaintext end
  // of its bridge; `refused`: the credential it showed was refused (its first request gets 407).
  HttpSession(DoorServices& impl, Worker& worker, boost::asio::ip::tcp::socket socket, AgentConnection connection,
              std::optional<policy::Decision> refused)
    requires(!kTls);
  // An inspected connection after its handshake: its slot is the connection row's.
  HttpSession(DoorServices& impl, Worker& worker, Stream stream, FixedDestination fixed)
    requires(kTls);
  ~HttpSession();
  void start();

 private:
  using Request = boost::beast::http::request_header<>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  // http_session_heads.ipp: reading heads, the keep-alive loop.
  void bind_connection();  // the connection is open: its admission and rows are bound, reading starts
  void read_request();
  void read_head_bytes(bool first);
  void on_head_bytes(bool first, boost::beast::error_code ec, std::size_t bytes);
  void check_head();
  void head_timed_out();  // header_timeout_ms passed before the head was whole
  void refuse_head(const HeadProblem& p);  // 400/414/431 from RequestHeadCheck: nothing is forwarded
  void take_head(boost::beast::error_code ec);  // the head is parsed (or failed): check it, then admit
  // A client that would be `anonymous` on a proxy with --client-tokens: its token (from
  // Proxy-Authorization) makes it the token's agent; false: refused 407 (client_tokens.hpp).
  bool take_client_token();
  void refuse_credential(policy::Decision no);  // 407 with a row, then the connection closes
  bool token_still_holds();  // false: refused 407, the token revoked or expired since
  void refuse_unparsed(boost::beast::error_code ec);
  void refuse_not_http(std::string why);  // an inspected connection that does not carry HTTP/1.1
  void note_target(std::string_view target, bool connect);
  void note_request(bool connect, std::string_view method, bool escape = false);  // the row's method and kind
  bool is_connect() const;
  std::string what() const;

  // http_session_decide.ipp: the decision.
  void take_proxy_target();
  void hand_on_connect();  // a CONNECT's target, to TargetStep
  void take_fixed_target();  // a request on a FixedDestination connection
  bool tripped();            // the tripwire refused the request (answered and recorded)
  bool refused_upgrade();    // an Upgrade netbox does not carry was refused (upgraded_request.hpp)
  void admit();
  void act_on(AdmissionResult result);  // refuse, or open the exchange and forward
  std::optional<Refused> apply_request_rules(Admitted& yes);  // `rules`, once the host is let through

  // http_session_forward.ipp: the way out.
  void forward();  // after admit (and, with --audit-sync, once the row is durable)
  bool take_pooled();
  void connect_upstream();
  void on_connected(UpstreamConnected<kTls> r);
  void send_upstream();
  void on_body_sent(RequestBodyResult r);
  void body_refused();  // the body gate refused the body: nothing of the request went
  void request_body_failed(boost::beast::error_code ec);
  void upstream_write_failed(boost::beast::error_code ec);
  bool may_resend() const;
  void relay_response();
  void on_relayed(RelayResult r);
  void start_upgraded();  // the upstream's 101 went to the agent: bytes both ways (upgraded_relay.hpp)
  void on_upgraded_end(std::string error);

  // http_session_close.ipp: answers without forwarding; the exchange writes (or
  // completes, as error) the row.
  void refuse(Refusal r, bool close, std::string error = {});
  void refuse_unaudited(std::string why);  // 503: the audit store did not take the row (open_row)
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

  DoorServices& impl_;
  Worker& worker_;
  Stream stream_;
  boost::beast::flat_buffer buffer_{kReadBufferLimit};
  std::optional<StreamingRequestParser> parser_;
  SessionLink link_;
  Admission admission_;
  Exchange exchange_;  // the current request's row
  ActiveRequest rq_;
  typename Link::Holder upstream_;
  PieceBuffer pieces_;  // body pieces, request then response
  RequestRelay<Stream, typename Link::Stream> body_;   // the agent's body, to the upstream
  ResponseRelay<Stream, typename Link::Stream> relay_;  // the upstream's answer, to the agent
  UpgradedRelay<Stream, typename Link::Stream> upgraded_;  // after a 101 to a WebSocket upgrade
  std::shared_ptr<void> refusal_;  // keeps a refusal message alive while it is written
};

using ClientSession = HttpSession<boost::beast::tcp_stream>;
using InspectedSession = HttpSession<AgentTlsStream>;

extern template class HttpSession<boost::beast::tcp_stream>;
extern template class HttpSession<AgentTlsStream>;

}  // namespace netbox::proxy
