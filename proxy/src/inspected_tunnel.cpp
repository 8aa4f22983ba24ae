#include "inspected_tunnel.hpp"

#include "audit_room.hpp"
#include "credentials.hpp"
#include "head_writer.hpp"
#include "headers.hpp"
#include "request_head.hpp"
#include "policy_answer.hpp"
#include "target.hpp"

#include "netbox/tls/client_hello.hpp"

#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <openssl/ssl.h>

#include <algorithm>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

InspectedTunnel::InspectedTunnel(ProxyRuntime& impl, Worker& worker, tcp::socket client, std::string preface,
                                 std::string early, Exchange tunnel, InspectionScope scope)
    : impl_(impl),
      worker_(worker),
      client_(std::move(client)),
      preface_(std::move(preface)),
      hello_(std::move(early)),
      tunnel_(std::move(tunnel)),
      inner_(impl),
      scope_(std::move(scope)),
      timer_(worker.ioc) {
  inner_.connection(scope_.agent, scope_.client_addr, scope_.metric_label);
  boost::system::error_code ec;
  const auto peer = client_.remote_endpoint(ec);
  if (!ec) pool_scope_ = UpstreamPool::scope(scope_.agent, peer.address());
  impl_.counters.active_tunnels.fetch_add(1);
}

InspectedTunnel::~InspectedTunnel() { impl_.counters.active_tunnels.fetch_sub(1); }

void InspectedTunnel::start() {
  if (preface_.empty()) return on_established({});
  arm(std::chrono::seconds(30));
  asio::async_write(client_, asio::buffer(preface_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_established(ec); });
}

// The timer measures silence: each piece read or written moves last_ on, and a wait that
// ends before `span_` of silence waits again for the rest. A request head that has begun
// must be whole by head_deadline_ (header_timeout_ms, as on the plain door), however it
// trickles. Either closes the agent's connection.
void InspectedTunnel::arm(std::chrono::milliseconds span) {
  span_ = span;
  head_deadline_.reset();
  touch();
  wait_idle();
}

void InspectedTunnel::touch() { last_ = std::chrono::steady_clock::now(); }

void InspectedTunnel::wait_idle() {
  auto deadline = last_ + span_;
  if (head_deadline_) deadline = std::min(deadline, *head_deadline_);
  timer_.expires_at(deadline);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec) return;
    auto self = weak.lock();
    if (!self) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - self->last_ < self->span_ && !(self->head_deadline_ && now >= *self->head_deadline_))
      return self->wait_idle();
    boost::system::error_code ignored;
    if (self->tls_) self->tls_->lowest_layer().close(ignored);
    else self->client_.close(ignored);
  });
}

void InspectedTunnel::on_established(boost::system::error_code ec) {
  if (ec) return close("answering the agent's connection request failed: " + ec.message());
  arm(scope_.profile->limits.header_timeout);
  check_hello();
}

void InspectedTunnel::read_hello() {
  const std::size_t have = hello_.size();
  hello_.resize(std::min(tls::kMaxHelloBytes + 1, have + 4096));
  client_.async_read_some(asio::buffer(hello_.data() + have, hello_.size() - have),
                          [self = shared_from_this(), have](boost::system::error_code ec, std::size_t n) {
                            self->hello_.resize(have + n);
                            self->on_hello_bytes(ec, n);
                          });
}

void InspectedTunnel::on_hello_bytes(boost::system::error_code ec, std::size_t) {
  if (ec) return close(hello_.empty() ? std::string() : "the agent went away before its TLS ClientHello was complete");
  check_hello();
}

void InspectedTunnel::check_hello() {
  const auto hello = tls::read_client_hello(
      {reinterpret_cast<const std::uint8_t*>(hello_.data()), hello_.size()});
  const std::string where = authority(scope_.host.name, scope_.port);
  auto asked = server_name_asked(hello);
  switch (hello.status) {
    case tls::ClientHello::Status::need_more:
      if (hello_.size() <= tls::kMaxHelloBytes) return read_hello();
      asked.problem = "longer than netbox reads";
      break;
    case tls::ClientHello::Status::not_tls:
      return refuse_tunnel(Outcome::deny, "inspect",
                           "netbox inspects " + where +
                               ": only TLS carrying HTTP/1.1 goes through this tunnel, and what the agent sent is "
                               "not TLS");
    case tls::ClientHello::Status::malformed:
    case tls::ClientHello::Status::complete:
      break;
  }
  // The name the agent's TLS asks for must be the one the policy decided on; another
  // would reach a different service behind the same front (domain fronting).
  const auto name = policy::check_server_name(scope_.host, scope_.name_from_address, asked, policy::TlsEnd::netbox,
                                              "the host this connection was admitted for");
  if (!name.lets_through()) return refuse_tunnel(outcome_of(name.verdict), name.rule, name.reason);
  leaf_ = impl_.inspector->leaf(scope_.host.name);
  try {
    tls_.emplace(std::move(client_), impl_.inspector->agent_context().native_handle(), hello_);
  } catch (const std::exception& e) {
    return close(e.what());
  }
  // The engine has its own copy; an idle connection does not keep the ClientHello's.
  std::string().swap(hello_);
  SSL* s = tls_->native_handle();
  if (SSL_use_certificate(s, leaf_->cert.get()) != 1 || SSL_use_PrivateKey(s, leaf_->key.get()) != 1)
    return close("netbox could not use the leaf certificate for " + scope_.host.name);
  tls_->async_handshake(
      [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_handshake(ec); });
}

void InspectedTunnel::refuse_tunnel(Outcome outcome, const std::string& rule, std::string reason) {
  tunnel_.overrule(outcome, rule, reason);
  auto res = std::make_shared<Response>(
      make_refusal({403, outcome, "CONNECT " + authority(scope_.host.name, scope_.port), rule, reason, {}}, 11,
                   false));
  tunnel_status_ = 403;
  http::async_write(client_, *res, [self = shared_from_this(), res, reason](beast::error_code, std::size_t) {
    self->close(reason);
  });
}

void InspectedTunnel::on_handshake(boost::system::error_code ec) {
  if (ec) return close("the TLS handshake with the agent failed: " + ec.message());
  read_request();
}

// The head is read as the plain door reads it (http_session.cpp): its bytes are checked
// by RequestHeadCheck before Beast parses them, so an ambiguous head (two Content-Lengths,
// an odd Transfer-Encoding, obs-fold ...) is refused with 400 here too, not re-framed.
void InspectedTunnel::read_request() {
  // Back pressure, as on every door: each inner request makes a row; none is read while the
  // writer is full.
  if (!audit_room_or_wait(*impl_.writer, timer_.get_executor(), [self = shared_from_this()] { self->read_request(); }))
    return;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(kHeaderLimit));
  parser_->body_limit(kBodyLimit);
  head_check_ = RequestHeadCheck{};
  arm(scope_.profile->limits.idle_timeout);
  if (buffer_.size() > 0) {  // a pipelined request is (partly) here: its head deadline starts now
    start_head_deadline();
    return check_head();
  }
  read_head_bytes();
}

void InspectedTunnel::read_head_bytes() {
  tls_->async_read_some(buffer_.prepare(beast::read_size(buffer_, kHeaderLimit + 1)),
                        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                          if (ec) return self->on_request(ec);
                          self->buffer_.commit(n);
                          self->touch();
                          if (!self->head_deadline_) self->start_head_deadline();
                          self->check_head();
                        });
}

// The wait under way may end later than the new deadline: it is set again.
void InspectedTunnel::start_head_deadline() {
  head_deadline_ = last_ + scope_.profile->limits.header_timeout;
  wait_idle();
}

void InspectedTunnel::check_head() {
  const auto data = buffer_.data();
  switch (head_check_.scan({static_cast<const char*>(data.data()), data.size()})) {
    case RequestHeadCheck::State::refused:
      return refuse_head();
    case RequestHeadCheck::State::need_more:
      return read_head_bytes();
    case RequestHeadCheck::State::complete:
      break;
  }
  beast::error_code ec;
  buffer_.consume(parser_->put(buffer_.data(), ec));
  if (!ec && !parser_->is_header_done()) ec = http::error::partial_message;  // the check said complete
  if (ec || parser_->is_done()) return on_request(ec);
  head_deadline_.reset();
  read_more();
}

void InspectedTunnel::refuse_head() {
  const auto& p = head_check_.problem();
  inner_.begin();
  inner_.request(false, head_check_.method());
  inner_.target(scope_.host.name, scope_.port, {});
  keep_alive_ = false;
  buffer_.clear();
  // What does not even start like an HTTP/1.1 request, first in the tunnel, is no
  // request: the tunnel carries something else.
  if (requests_ == 0 && head_check_.method().empty()) return refuse_not_http(p.reason);
  refuse_request({p.status, Outcome::error,
                  head_check_.method() + " https://" + host_header(scope_.host.name, scope_.port, 443) +
                      head_check_.target().substr(0, 256),
                  "request", p.reason, {}});
}

// read_some, not read: each piece is activity, so a large body uploading slowly is not
// taken for silence.
void InspectedTunnel::read_more() {
  http::async_read_some(*tls_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec || self->parser_->is_done()) return self->on_request(ec);
    self->touch();
    self->read_more();
  });
}

std::string InspectedTunnel::what() const {
  const auto& req = parser_->get();
  return std::string(req.method_string()) + " https://" + host_header(scope_.host.name, scope_.port, 443) +
         std::string(req.target());
}

// The tunnel's first bytes inside TLS are not an HTTP/1.1 request: the tunnel carries
// something else, and its row says so.
void InspectedTunnel::refuse_not_http(const std::string& why) {
  const std::string reason = "netbox inspects " + authority(scope_.host.name, scope_.port) +
                             ": only HTTP/1.1 requests go through this tunnel, and what the agent sent inside "
                             "TLS is not HTTP/1.1 (" + why + ")";
  tunnel_.overrule(Outcome::deny, "inspect", reason);
  refuse_request({400, Outcome::deny, {}, "inspect", reason, {}});
}

void InspectedTunnel::on_request(beast::error_code ec) {
  if (ec) {
    const bool quiet = !parser_->got_some() || ec == http::error::end_of_stream || ec == asio::error::eof ||
                       ec == ssl::error::stream_truncated || ec == asio::error::operation_aborted ||
                       ec == asio::error::connection_reset;
    if (quiet) return close();
    inner_.begin();
    inner_.request(false, parser_->is_header_done() ? std::string_view(parser_->get().method_string()) : std::string_view{});
    inner_.target(scope_.host.name, scope_.port, {});
    keep_alive_ = false;
    if (requests_ == 0 && !parser_->is_header_done()) return refuse_not_http(describe_request_error(ec));
    if (ec == http::error::body_limit)
      return refuse_request({413, Outcome::error, {}, "request",
                             "a request body inside an inspected tunnel is larger than 16 MiB", {}});
    return refuse_request({400, Outcome::error, {}, "request", describe_request_error(ec), {}});
  }
  ++requests_;
  auto& req = parser_->get();
  keep_alive_ = req.keep_alive() && !impl_.is_stopping();
  head_ = req.method() == http::verb::head;
  inner_.begin();
  inner_.request(false, req.method_string());
  inner_.parent(tunnel_.row());
  const std::string_view target = req.target();
  const auto query = target.find('?');
  inner_.target(scope_.host.name, scope_.port, target.substr(0, query), true);
  inner_.host(scope_.host.name);
  if (!handled_method(req.method()) || req.method() == http::verb::connect)
    return refuse_request({405, Outcome::error, what(), "method",
                           "netbox does not forward the method " + std::string(req.method_string()), {}});
  if (target.empty() || target.front() != '/')
    return refuse_request({400, Outcome::error, what(), "request",
                           "a request inside an inspected tunnel has an origin-form target (\"/path\")", {}});

  if (scope_.tripwire) {
    const auto& wire = *scope_.tripwire;
    auto r = wire.check_request(scope_.host.name, scope_.port, req, target);
    if (!r) r = wire.check_body(scope_.host.name, scope_.port, req.body());
    if (r) {
      Refused no{*r, r->rule, r->reason, scope_.endpoints.front().address().to_string(), {}};
      inner_.refused(no);
      r->what = what();
      return refuse_request(std::move(*r));
    }
  }
  Admitted a;
  a.outcome = scope_.outcome;
  a.decision = scope_.decision;
  a.endpoints = scope_.endpoints;
  auto v = policy::decide_request(*scope_.profile, {scope_.host.name, scope_.port, scope_.decision},
                                  req.method_string(), target);
  if (!v.refused() && !v.path.empty()) inner_.target(scope_.host.name, scope_.port, v.path);
  if (auto no = take_decision(a, std::move(v.decision), v.status)) {
    inner_.refused(*no);
    no->refusal.what = what();
    return refuse_request(std::move(no->refusal));
  }
  if (!inner_.admitted(a)) {
    keep_alive_ = false;
    return refuse_request({503, Outcome::error, what(), "audit",
                           "the audit store did not accept the record of this request", {}});
  }
  forward(std::move(v.path_and_query));
}

void InspectedTunnel::forward(std::string path_and_query) {
  auto& req = parser_->get();
  UpstreamTlsRequest up;
  BodyFraming framing;
  if (!req.body().empty() || parser_->chunked() || parser_->content_length()) {
    framing.kind = BodyFraming::Kind::length;
    framing.length = req.body().size();
  }
  // The secret goes into the head written upstream, nowhere else: not the row, nor a log
  // line. The answer must come back uncompressed, so that it can be searched for it.
  injected_ = scope_.tripwire &&
              !inject_credentials(scope_.tripwire->credentials(), scope_.host.name, scope_.port, req.base()).empty();
  if (injected_) req.erase(http::field::accept_encoding);
  append_forwarded_request(up.bytes, req.base(), path_and_query, host_header(scope_.host.name, scope_.port, 443),
                           framing);
  up.bytes += req.body();
  inner_.bytes_up = req.body().size();
  up.endpoints = scope_.endpoints;
  up.host = scope_.host.name;
  up.head = head_;
  up.may_resend = idempotent(req.method());
  up.may_pool = req.body().empty() || consumes_body(req.method());
  // Without the agent's address (its connection already gone) no key can name the agent.
  if (!pool_scope_.empty()) {
    up.pool = worker_.pool.get();
    up.pool_scope = pool_scope_;
  }
  const auto& limits = scope_.profile->limits;
  up.dial = DialLimits::of(limits, impl_.dial_fd_ceiling, worker_.pool.get());
  up.idle_timeout = limits.idle_timeout;
  up.body_limit = kBodyLimit;
  timer_.cancel();  // the upstream exchange has its own timer
  fetch_over_tls(worker_.ioc, *impl_.inspector, std::move(up),
                 [self = shared_from_this()](UpstreamAnswer a) { self->on_answer(std::move(a)); });
}

void InspectedTunnel::on_answer(UpstreamAnswer a) {
  if (!a.address.empty()) inner_.dialled(a.address);
  if (!a.response) {
    impl_.counters.upstream_errors.fetch_add(1);
    return refuse_request({a.failure_status, Outcome::error, what(), {}, a.error, {}}, a.error);
  }
  auto res = std::make_shared<Response>(std::move(*a.response));
  // The answer goes to the agent framed by its length: a coding left on the body (the
  // "gzip" of "gzip, chunked") could not be named, and would hide it from the search.
  if (!a.transfer_codings.empty()) {
    impl_.counters.upstream_errors.fetch_add(1);
    const std::string why = "the upstream's answer has the transfer coding '" + a.transfer_codings +
                            "': inside an inspected tunnel netbox relays none but chunked";
    return refuse_request({502, Outcome::error, what(), {}, why, {}}, why);
  }
  if (injected_)
    if (auto why = redact_answer(scope_.tripwire->credentials(), scope_.host.name, scope_.port, res->reason(),
                                 res->base(), res->body());
        !why.empty())
      return refuse_request({502, Outcome::error, what(), "credentials", why, {}}, why);
  strip_response_fields(res->base(), head_ ? a.content_length : std::nullopt);
  res->keep_alive(keep_alive_);
  if (!head_) res->prepare_payload();
  inner_.bytes_down = res->body().size();
  inner_.finish(static_cast<int>(res->result_int()));
  respond(std::move(res), !keep_alive_);
}

void InspectedTunnel::refuse_request(Refusal r, std::string error) {
  if (r.what.empty() && parser_ && parser_->is_header_done()) r.what = what();
  inner_.refuse(r, std::move(error));
  // A body that was not read whole cannot be skipped: the connection ends.
  if (parser_ && !parser_->is_done()) keep_alive_ = false;
  respond(std::make_shared<Response>(make_refusal(r, 11, keep_alive_)), !keep_alive_);
}

void InspectedTunnel::respond(std::shared_ptr<Response> res, bool close_after) {
  // One flat write: asio's TLS stream encrypts one buffer per write, so Beast's serializer
  // (head pieces, then body) would cost a TLS record and a send() each.
  writing_.clear();
  append_response_head(writing_, res->base());
  writing_ += res->body();
  written_ = 0;
  arm(scope_.profile->limits.idle_timeout);
  write_more(close_after);
}

// Piece by piece, so that an agent reading a large answer slowly is progress, not silence.
void InspectedTunnel::write_more(bool close_after) {
  const auto rest = asio::buffer(writing_) + written_;
  if (rest.size() == 0) {
    // A large answer's buffer is not held by an idle connection.
    if (writing_.capacity() > 16 * 1024) std::string().swap(writing_);
    if (close_after) return close();
    return read_request();
  }
  tls_->async_write_some(rest, [self = shared_from_this(), close_after](boost::system::error_code ec, std::size_t n) {
    if (ec) return self->close("writing the answer to the agent failed: " + ec.message());
    self->written_ += n;
    self->touch();
    self->write_more(close_after);
  });
}

void InspectedTunnel::close(std::string error) {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  boost::system::error_code ignored;
  if (tls_) {
    tls_->lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    tls_->lowest_layer().close(ignored);
  } else {
    client_.shutdown(tcp::socket::shutdown_both, ignored);
    client_.close(ignored);
  }
  inner_.end();
  tunnel_.finish(tunnel_status_, std::move(error));
}

}  // namespace netbox::proxy
