#include "http_session.hpp"

#include "head_writer.hpp"
#include "headers.hpp"
#include "tunnel.hpp"

#include "netbox/audit/printable.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string endpoint_text(const tcp::endpoint& ep) {
  return authority(canonical_address(ep.address()).to_string(), ep.port());
}

// RFC 9110 9.2.2: a request that may be sent again when its connection closed before
// the answer. Any other (POST, PATCH) may have had its effect already: never resent.
bool idempotent(http::verb v) {
  switch (v) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::options:
    case http::verb::trace:
    case http::verb::put:
    case http::verb::delete_:
      return true;
    default:
      return false;
  }
}

// Methods whose body every server reads. After any other request with a body (GET,
// DELETE, OPTIONS ...), an upstream may have left the body unread, to be taken as the
// next request on the connection.
bool consumes_body(http::verb v) {
  return v == http::verb::post || v == http::verb::put || v == http::verb::patch;
}

bool handled_method(http::verb v) {
  switch (v) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::post:
    case http::verb::put:
    case http::verb::delete_:
    case http::verb::patch:
    case http::verb::options:
    case http::verb::connect:
      return true;
    default:
      return false;
  }
}

// The Host header for the upstream: the normalised host the policy decided on (never the
// spelling the agent used), port omitted when default.
std::string host_header(const policy::Host& host, std::uint16_t port) {
  std::string h = host.name.find(':') != std::string::npos ? "[" + host.name + "]" : host.name;
  if (port != 80) h += ":" + std::to_string(port);
  return h;
}

}  // namespace

ClientSession::ClientSession(Server::Impl& impl, Worker& worker, tcp::socket socket, ClientSlot slot)
    : impl_(impl),
      worker_(worker),
      slot_(std::move(slot)),
      stream_(std::move(socket)),
      admission_(impl.own, impl.caps, impl.counters),
      exchange_(impl),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }) {
  impl_.counters.active_connections.fetch_add(1);
}

ClientSession::~ClientSession() { impl_.counters.active_connections.fetch_sub(1); }

void ClientSession::start() {
  boost::system::error_code ec;
  peer_ = stream_.socket().remote_endpoint(ec);
  peer_text_ = endpoint_text(peer_);  // once per connection: every request's row carries it
  // Identity and policy are fixed per connection: a reload applies to new connections.
  who_ = impl_.agents.lookup(peer_.address());
  policy_ = impl_.current_policy();
  profile_ = who_.profile.empty() ? &policy_->base : &policy_->profile_for(who_.profile);
  admission_.bind(*policy_, *profile_, who_.agent);
  exchange_.connection(who_.agent, peer_text_, impl_.metric_label(who_));
  pool_scope_ = UpstreamPool::scope(who_.agent, peer_.address());
  read_request();
}

void ClientSession::read_request() {
  // Back pressure: while the audit queue is full, nothing more is read from this client
  // (each request makes a row), so a flood slows its sender down instead of losing rows
  // or having others refused. A failing store says there is room: insert() then refuses.
  if (!impl_.writer->has_room())
    return impl_.writer->when_room([self = shared_from_this(), ex = stream_.get_executor()] {
      asio::post(ex, [self] { self->read_request(); });
    });
  parser_.emplace();
  prepare_request_parser(*parser_);
  head_check_ = RequestHeadCheck{};
  if (buffer_.size() > 0) {  // a pipelined request is (partly) here: its head timer starts now
    head_deadline_ = std::chrono::steady_clock::now() + profile_->limits.header_timeout;
    return check_head();
  }
  read_head_bytes(true);
}

// Between requests a keep-alive agent may stay quiet for idle_timeout_ms; from the first
// byte of a request on, its whole head must arrive by head_deadline_ (header_timeout_ms),
// so a client trickling bytes (slowloris) cannot hold a connection open for ever.
void ClientSession::read_head_bytes(bool first) {
  if (first) stream_.expires_after(profile_->limits.idle_timeout);
  else stream_.expires_at(head_deadline_);
  stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kHeaderLimit + 1)),
                          beast::bind_front_handler(&ClientSession::on_head_bytes, shared_from_this(), first));
}

void ClientSession::on_head_bytes(bool first, beast::error_code ec, std::size_t bytes) {
  if (ec) {
    // Nothing to answer: the agent went away, stayed idle, or did not finish its head in
    // time (the timed-out stream is closed already).
    if (ec == beast::error::timeout && !first)
      impl_.log.write("header_timeout", {{"client", peer_text_},
                                         {"agent", who_.agent},
                                         {"received", std::to_string(buffer_.size())}});
    return close_client();
  }
  buffer_.commit(bytes);
  if (first) head_deadline_ = std::chrono::steady_clock::now() + profile_->limits.header_timeout;
  check_head();
}

void ClientSession::check_head() {
  const auto data = buffer_.data();
  switch (head_check_.scan({static_cast<const char*>(data.data()), data.size()})) {
    case RequestHeadCheck::State::refused:
      return refuse_head(head_check_.problem());
    case RequestHeadCheck::State::need_more:
      return read_head_bytes(false);
    case RequestHeadCheck::State::complete:
      break;
  }
  // The whole head is in buffer_: Beast parses it from there, here and now (an
  // async_read_header would only post the same parse through the io_context).
  beast::error_code ec;
  const std::size_t used = parser_->put(buffer_.data(), ec);
  buffer_.consume(used);
  if (!ec && !parser_->is_header_done()) ec = http::error::partial_message;  // the check said complete
  // The decision is taken on the head alone: a body stays unread (in the socket, or the
  // part that came with the head in buffer_) until its request is admitted.
  take_head(ec);
}

void ClientSession::refuse_head(const HeadProblem& p) {
  exchange_.begin();
  allowed_.clear();
  req_ = Request{};
  const bool connect = head_check_.method() == "CONNECT";
  exchange_.request(connect, head_check_.method(), true);
  note_target(head_check_.target(), connect);
  std::string what = head_check_.method() + " " + head_check_.target().substr(0, 256);
  refuse({p.status, Outcome::error, head_check_.method().empty() ? std::string() : what, "request", p.reason, {}}, true);
}

// The destination of a refused request, as far as it can be read, for its audit row:
// escaped, since a target refused before Beast parsed it may hold any byte.
void ClientSession::note_target(std::string_view target, bool connect) {
  const auto t = connect ? parse_connect_target(target) : parse_absolute_target(target);
  exchange_.target(t.host, t.port, t.path, true);
}

bool ClientSession::is_connect() const { return req_.method() == http::verb::connect; }

std::string ClientSession::what() const {
  return std::string(req_.method_string()) + " " + std::string(req_.target());
}

void ClientSession::take_head(beast::error_code ec) {
  exchange_.begin();
  allowed_.clear();
  if (ec) {
    // A client going away between requests is normal, not a malformed request.
    if (!parser_->got_some() || ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return close_client();
    }
    req_ = Request{};
    if (parser_->is_header_done()) {
      req_ = parser_->get().base();
      exchange_.request(is_connect(), req_.method_string());
      note_target(req_.target(), is_connect());
    }
    if (ec == http::error::header_limit)
      return refuse({431, Outcome::error, {}, "request", "the request headers are larger than 64 KiB", {}}, true);
    if (ec == http::error::body_limit)
      return refuse({413, Outcome::error, {}, "request", "the request body is larger than 64 MiB", {}}, true);
    return refuse({400, Outcome::error, {}, "request", describe_request_error(ec), {}}, true);
  }
  // The head moves out; the parser stays, to read the body if the request is admitted.
  req_ = std::move(parser_->get().base());
  exchange_.request(is_connect(), req_.method_string());
  client_keep_alive_ = !is_connect() && parser_->keep_alive();
  if (impl_.is_stopping()) client_keep_alive_ = false;
  request_had_body_ = !parser_->is_done();
  body_started_ = false;
  body_chunked_ = request_had_body_ && parser_->chunked();
  expect_continue_ = request_had_body_ && req_.version() >= 11 &&
                     beast::iequals(req_[http::field::expect], "100-continue");

  if (!handled_method(req_.method())) {
    return refuse({405, Outcome::error, what(), "method",
                   "netbox does not forward the method " + std::string(req_.method_string()), {}}, !client_keep_alive_);
  }
  if (is_connect() && request_had_body_) {
    note_target(req_.target(), true);
    return refuse({400, Outcome::error, what(), "request", "a CONNECT request has no body", {}}, true);
  }
  target_ = is_connect() ? parse_connect_target(req_.target()) : parse_absolute_target(req_.target());
  if (!target_.error.empty()) {
    exchange_.target(target_.host, target_.port, {});
    return refuse({400, Outcome::error, what(), "request", target_.error, {}}, true);
  }
  exchange_.target(target_.host, target_.port, target_.path);
  auto parsed = policy::parse_host(target_.host);
  if (!parsed) {
    return refuse({400, Outcome::error, what(), "host", "the host '" + target_.host + "' is not valid: " +
                                                                 parsed.error.message, {}}, true);
  }
  host_ = *parsed.host;
  exchange_.host(host_.name);
  admit();
}

// Admission decides; the only step it leaves to the session is a lookup.
void ClientSession::admit() {
  if (auto r = admission_.begin(host_, target_.port)) return act_on(std::move(*r));
  const auto t0 = std::chrono::steady_clock::now();
  worker_.resolver->resolve(host_.name, [self = shared_from_this(), t0](ResolveResult r) {
    if (!r.from_cache) self->impl_.counters.dns_latency.observe(std::chrono::steady_clock::now() - t0);
    self->on_resolved(std::move(r));
  });
}

void ClientSession::on_resolved(ResolveResult r) { act_on(admission_.resolved(r)); }

void ClientSession::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    no->refusal.what = what();
    return refuse(std::move(no->refusal), !client_keep_alive_, std::move(no->error));
  }
  auto& yes = std::get<Admitted>(result);
  // From here on the row is open: a refusal completes it as error.
  const bool queued = exchange_.admitted(yes);
  allowed_ = std::move(yes.endpoints);
  if (!queued) return refuse_unaudited("the audit store did not accept the record of this request");
  if (impl_.options.audit_sync) {
    // Strict mode: nothing leaves until the decision row is durable. The callback runs on
    // the writer thread; the session continues on its own io thread.
    return impl_.writer->on_committed(exchange_.row(), [self = shared_from_this()](bool ok) {
      asio::post(self->stream_.get_executor(), [self, ok] {
        if (ok) return self->forward();
        self->refuse_unaudited("the audit store could not make the record of this request durable");
      });
    });
  }
  forward();
}

void ClientSession::refuse_unaudited(std::string why) {
  exchange_.end();
  impl_.log.write("audit_refused", {{"host", host_.name}, {"agent", who_.agent}, {"reason", why}});
  // Fail closed: no connection. Any row already queued is completed by the Exchange.
  auto res = std::make_shared<Response>(
      make_refusal({503, Outcome::error, what(), "audit", std::move(why), {}}, req_.version(), false));
  refusal_ = res;
  http::async_write(stream_, *res, [self = shared_from_this()](beast::error_code e, std::size_t) {
    self->on_refusal_written(true, e);
  });
}

void ClientSession::forward() {
  if (is_connect()) return connect_upstream();
  // Reuse a pooled connection to one of the checked addresses, if there is one.
  for (const auto& ep : allowed_) {
    UpstreamPool::key(pool_key_, pool_scope_, ep, host_.name);
    if (auto s = worker_.pool->take(pool_key_)) {
      reused_upstream_ = true;
      if (ep != allowed_.front()) exchange_.dialled(ep.address().to_string());
      upstream_.emplace(std::move(*s));
      return send_upstream();
    }
  }
  connect_upstream();
}

void ClientSession::connect_upstream() {
  reused_upstream_ = false;
  const auto t0 = std::chrono::steady_clock::now();
  const auto& limits = profile_->limits;
  dial(worker_.ioc, allowed_,
       {limits.connect_timeout, limits.effective_dial_budget(), impl_.dial_fd_ceiling, worker_.pool.get()},
       [self = shared_from_this(), t0](DialResult r) {
    self->impl_.counters.connect_latency.observe(std::chrono::steady_clock::now() - t0);
    self->on_dialed(std::move(r));
  });
}

void ClientSession::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    impl_.counters.upstream_errors.fetch_add(1);
    const unsigned status = r.failure == DialFailure::timeout       ? 504
                            : r.failure == DialFailure::descriptors ? 503
                                                                    : 502;
    return upstream_failed(status, r.error);
  }
  exchange_.dialled(r.endpoint.address().to_string());
  if (is_connect()) return start_tunnel(std::move(r.socket));
  UpstreamPool::key(pool_key_, pool_scope_, r.endpoint, host_.name);
  upstream_.emplace(std::move(r.socket));
  send_upstream();
}

void ClientSession::send_upstream() {
  out_.clear();
  BodyFraming framing;
  if (request_had_body_) {
    framing.kind = body_chunked_ ? BodyFraming::Kind::chunked : BodyFraming::Kind::length;
    if (!body_chunked_) framing.length = parser_->content_length().value_or(0);
  }
  append_forwarded_request(out_, req_, target_.path_and_query, host_header(host_, target_.port), framing);
  request_head_pending_ = request_had_body_;
  if (request_had_body_) {
    // The head goes with the first piece of the body, which is read only now.
    if (expect_continue_) return send_continue();
    return read_request_piece();
  }
  upstream_->expires_after(profile_->limits.idle_timeout);
  asio::async_write(*upstream_, asio::buffer(out_),
                    beast::bind_front_handler(&ClientSession::on_upstream_written, shared_from_this()));
}

// The agent asked to hear whether its body is wanted before sending it: it is, now that
// the request is admitted and an upstream connection is ready.
void ClientSession::send_continue() {
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  expect_continue_ = false;
  stream_.expires_after(profile_->limits.idle_timeout);
  asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      if (ec) return self->request_body_failed(ec);
                      self->read_request_piece();
                    });
}

// Up to 64 KiB of the request body into pieces_: first from what is already in
// buffer_ (parsed here and now), then from the agent's socket.
void ClientSession::read_request_piece() {
  auto& body = parser_->get().body();
  body.data = pieces_.get();
  body.size = PieceBuffer::kSize;
  if (buffer_.size() > 0) {
    // As much as is here goes into one piece (many small chunks make one write); a piece
    // with something in it goes on at once rather than wait for more.
    beast::error_code ec;
    do {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (used == 0 && !ec) ec = http::error::need_more;  // no progress: never spin
    } while (!ec && !parser_->is_done() && buffer_.size() > 0 && body.size > 0);
    if (ec == http::error::need_more && body.size < PieceBuffer::kSize) ec = {};
    if (ec != http::error::need_more) return request_piece(ec);
  }
  stream_.expires_after(profile_->limits.idle_timeout);
  http::async_read_some(stream_, buffer_, *parser_,
                        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->request_piece(ec); });
}

void ClientSession::request_piece(beast::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return request_body_failed(ec);
  const auto got = PieceBuffer::kSize - parser_->get().body().size;
  // Only framing arrived (a chunk header): nothing to pass on yet.
  if (got == 0 && !parser_->is_done()) return read_request_piece();
  body_started_ = true;
  send_request_piece(got);
}

// One write to the upstream: the head if it has not gone yet, `got` body bytes (a chunk
// of their own when the body goes chunked; an empty piece is never one, where it would
// read as the last), and the end of the body once the agent's has ended.
void ClientSession::send_request_piece(std::size_t got) {
  last_piece_up_ = parser_->is_done();
  piece_up_ = got;
  if (!request_head_pending_) out_.clear();
  request_head_pending_ = false;
  const auto tail = frame_piece(out_, body_chunked_, got, last_piece_up_);
  const std::array<asio::const_buffer, 3> pieces{asio::buffer(out_), asio::buffer(pieces_.get(), got),
                                                 asio::buffer(tail.data(), tail.size())};
  upstream_->expires_after(profile_->limits.idle_timeout);
  asio::async_write(*upstream_, pieces, [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    if (ec) return self->on_upstream_written(ec, n);
    self->exchange_.bytes_up += self->piece_up_;
    if (!self->last_piece_up_) return self->read_request_piece();
    self->relay_response();
  });
}

// Reading the agent's body failed after the request was admitted. The upstream has part
// of a request and is never used again; the agent gets an answer if it still listens.
void ClientSession::request_body_failed(beast::error_code ec) {
  if (upstream_) {
    // A reset, not a FIN: the upstream must not take what it got for a whole request.
    beast::error_code ignored;
    upstream_->socket().set_option(asio::socket_base::linger(true, 0), ignored);
    upstream_.reset();
  }
  if (ec == http::error::body_limit)
    return refuse({413, Outcome::error, what(), "request", "the request body is larger than 64 MiB", {}}, true);
  if (ec == beast::error::timeout)
    return refuse({408, Outcome::error, what(), "request",
                   "the request body stopped arriving for " + std::to_string(profile_->limits.idle_timeout.count()) +
                       " ms",
                   {}}, true);
  if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
    return refuse({400, Outcome::error, what(), "request", "the request ended before its body was complete", {}}, true);
  refuse({400, Outcome::error, what(), "request", describe_request_error(ec), {}}, true);
}

// A reused connection that closed before answering may be dialled afresh and the request
// sent again, but only if that cannot do twice what the agent asked once.
bool ClientSession::may_resend() const { return reused_upstream_ && !body_started_ && idempotent(req_.method()); }

void ClientSession::on_upstream_written(beast::error_code ec, std::size_t) {
  if (ec) {
    if (may_resend()) {
      upstream_.reset();
      return connect_upstream();  // the pooled connection had gone stale: dial afresh
    }
    impl_.counters.upstream_errors.fetch_add(1);
    upstream_.reset();
    if (ec == beast::error::timeout) return upstream_failed(504, "sending the request upstream timed out");
    std::string why = "sending the request upstream failed: " + ec.message();
    if (reused_upstream_) why += not_resent();
    return upstream_failed(502, std::move(why));
  }
  relay_response();
}

void ClientSession::relay_response() {
  relay_.start(*upstream_, {req_.method(), req_.version(), client_keep_alive_, reused_upstream_, may_resend()},
               profile_->limits.idle_timeout, exchange_.bytes_down, shared_from_this());
}

// The exchange ends: pool the upstream connection if it is clean, complete the row, and
// read the agent's next request (or close).
void ClientSession::on_relayed(RelayResult r) {
  if (r.resend) {
    upstream_.reset();
    return connect_upstream();
  }
  if (r.answer) {  // nothing went to the agent: netbox answers
    upstream_.reset();
    if (r.unanswered) r.error += not_resent();
    return upstream_failed(r.answer, std::move(r.error));
  }
  client_keep_alive_ = r.keep_alive;
  // After a body the upstream may have left unread (a GET's, or any before an error
  // answer), the connection may still hold it, to be read as the next request: closed.
  const bool body_consumed = !request_had_body_ || (consumes_body(req_.method()) && r.status < 400);
  if (r.reusable && body_consumed) worker_.pool->put(pool_key_, upstream_->release_socket());
  upstream_.reset();
  const bool clean = r.error.empty();
  exchange_.finish(r.status, std::move(r.error));
  if (!clean && r.started) return abort_client();
  if (!clean || !client_keep_alive_) return close_client();
  read_request();
}

void ClientSession::start_tunnel(tcp::socket upstream) {
  // Bytes the agent sent after the CONNECT header (a pipelined TLS hello) go first.
  stream_.expires_never();
  std::string early(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  exchange_.client_slot = std::move(slot_);  // the agent's connection lives on in the tunnel
  auto t = std::make_shared<Tunnel>(impl_, stream_.release_socket(), std::move(upstream), std::move(early),
                                    std::move(exchange_), profile_->limits.idle_timeout);
  t->start();
}

void ClientSession::upstream_failed(unsigned status, std::string error) {
  refuse({status, Outcome::error, what(), {}, error, {}}, !client_keep_alive_ || is_connect(), error);
}

void ClientSession::refuse(Refusal r, bool close, std::string error) {
  if (is_connect()) close = true;  // a refused CONNECT never becomes a tunnel
  // A body that was not read cannot be skipped without reading it: the connection ends.
  if (body_unread()) close = true;
  auto res = std::make_shared<Response>(make_refusal(r, req_.version() ? req_.version() : 11, !close));
  exchange_.refuse(r, std::move(error));
  refusal_ = res;
  stream_.expires_after(std::chrono::seconds(30));
  http::async_write(stream_, *res, [self = shared_from_this(), close](beast::error_code e, std::size_t) {
    self->on_refusal_written(close, e);
  });
}

void ClientSession::on_refusal_written(bool close, beast::error_code ec) {
  refusal_.reset();
  if (!ec && body_unread()) return linger_close();
  if (ec || close) return close_client();
  read_request();
}

void ClientSession::close_client() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.close();
}

bool ClientSession::body_unread() const {
  return parser_ && parser_->is_header_done() && !parser_->is_done();
}

std::string ClientSession::not_resent() const {
  return "; netbox resends a request only when it is idempotent (RFC 9110 9.2.2) and none of its body has gone, "
         "so this " + std::string(req_.method_string()) + " was not sent again";
}

void ClientSession::linger_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  linger_left_ = kLingerBytes;
  stream_.expires_after(kLingerTime);
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(16 * 1024),
                          beast::bind_front_handler(&ClientSession::on_linger, shared_from_this()));
}

void ClientSession::on_linger(beast::error_code ec, std::size_t bytes) {
  if (ec || bytes >= linger_left_) return stream_.close();
  linger_left_ -= bytes;  // dropped: prepare() hands out the same 16 KiB again
  stream_.async_read_some(buffer_.prepare(16 * 1024),
                          beast::bind_front_handler(&ClientSession::on_linger, shared_from_this()));
}

void ClientSession::abort_client() {
  beast::error_code ec;
  stream_.socket().set_option(asio::socket_base::linger(true, 0), ec);
  stream_.close();
}

}  // namespace netbox::proxy
