// The admitted request's way out (ClientSession, http_session.hpp): an upstream
// connection (a pooled one to a checked address, or a fresh dial), the request head and
// body going up in pieces, then the ResponseRelay for the answer; or, for CONNECT, the
// Tunnel. The connection side (heads, keep-alive, refusals, close) is http_session.cpp.
#include "http_session.hpp"

#include "admission_steps.hpp"
#include "credentials.hpp"
#include "head_writer.hpp"
#include "inspected_tunnel.hpp"
#include "tunnel.hpp"

#include "netbox/policy/decide_request.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <array>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

void ClientSession::forward() {
  if (is_connect()) {
    if (policy::inspects(*profile_, host_.name, target_.port)) return start_inspection();
    return connect_upstream();
  }
  if (fixed_ && fixed_->dialled) {  // the connection its front door made already
    auto r = std::move(*fixed_->dialled);
    fixed_->dialled.reset();
    reused_upstream_ = false;
    return on_dialed(std::move(r));
  }
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
  dial_admitted(impl_, worker_, allowed_, profile_->limits,
                [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
}

void ClientSession::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    impl_.counters.upstream_errors.fetch_add(1);
    return upstream_failed(http_status(r.failure), r.error);
  }
  exchange_.dialled(r.endpoint.address().to_string());
  if (is_connect()) return start_tunnel(std::move(r.socket));
  UpstreamPool::key(pool_key_, pool_scope_, r.endpoint, host_.name);
  upstream_.emplace(std::move(r.socket));
  send_upstream();
}

void ClientSession::send_upstream() {
  out_.clear();
  held_ = 0;
  BodyFraming framing;
  if (request_had_body_) {
    framing.kind = body_chunked_ ? BodyFraming::Kind::chunked : BodyFraming::Kind::length;
    if (!body_chunked_) framing.length = parser_->content_length().value_or(0);
  }
  append_forwarded_request(out_, req_, target_.path_and_query, host_header(host_.name, target_.port, 80), framing);
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
  const std::size_t room = PieceBuffer::kSize - held_;
  body.data = pieces_.get() + held_;
  body.size = room;
  if (buffer_.size() > 0) {
    // As much as is here goes into one piece (many small chunks make one write); a piece
    // with something in it goes on at once rather than wait for more.
    beast::error_code ec;
    do {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (used == 0 && !ec) ec = http::error::need_more;  // no progress: never spin
    } while (!ec && !parser_->is_done() && buffer_.size() > 0 && body.size > 0);
    if (ec == http::error::need_more && body.size < room) ec = {};
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
  if (request_head_pending_ && who_.tripwire) {
    // Nothing has gone upstream yet: the first 64 KiB (or the whole body) is gathered
    // and scanned first, so a placeholder split across the agent's writes is seen.
    if (!parser_->is_done() && got < PieceBuffer::kSize) {
      held_ = got;
      return read_request_piece();
    }
    held_ = 0;
    if (auto r = who_.tripwire->check_body(host_.name, target_.port, {pieces_.get(), got})) return refuse_body(std::move(*r));
  }
  send_request_piece(got);
}

// The tripwire refused the body: the upstream connection got nothing and is dropped;
// the row, open since admission, becomes the deny the agent is answered.
void ClientSession::refuse_body(Refusal r) {
  upstream_.reset();
  exchange_.overrule(r.outcome, r.rule, r.reason);
  r.what = what();
  refuse(std::move(r), true);
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
  boost::system::error_code ec;
  const auto port = upstream.remote_endpoint(ec).port();
  exchange_.client_slot = std::move(slot_);  // the agent's connection lives on in the tunnel
  exchange_.settle();  // dialled: whatever happens next, the tunnel was allowed
  auto t = std::make_shared<Tunnel>(impl_, stream_.release_socket(), std::move(upstream), std::move(early),
                                    std::move(exchange_), profile_->limits.idle_timeout);
  t->verify_first_flight(host_, port, profile_->limits.header_timeout);  // domain fronting, as every door
  t->start();
}

}  // namespace netbox::proxy

namespace netbox::proxy {

void ClientSession::start_inspection() {
  // The policy guard lets `inspect` in only with a CA; never a blind tunnel instead.
  if (!impl_.inspector) return upstream_failed(503, "netbox has no CA loaded to inspect " + host_.name);
  stream_.expires_never();
  std::string early(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  exchange_.client_slot = std::move(slot_);
  InspectionScope scope{policy_, profile_, host_, target_.port, allowed_, decided_outcome_, decided_,
                        who_.agent, peer_text_, impl_.metric_label(who_), who_.tripwire};
  auto t = std::make_shared<InspectedTunnel>(impl_, worker_, stream_.release_socket(),
                                             "HTTP/1.1 200 Connection Established\r\n\r\n", std::move(early),
                                             std::move(exchange_), std::move(scope));
  t->start();
}

}  // namespace netbox::proxy
