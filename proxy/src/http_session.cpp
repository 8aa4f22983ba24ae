#include "http_session.hpp"

#include "head_writer.hpp"
#include "headers.hpp"
#include "tunnel.hpp"

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

// netbox's own listeners and admin endpoint are never a destination, in any mode: the
// policy cannot allow them, and report mode does not let them through.
policy::Decision own_endpoint_denial(const asio::ip::address& a, unsigned short port) {
  return {policy::Verdict::deny, "netbox",
          authority(canonical_address(a).to_string(), port) +
              " is netbox's own proxy or admin endpoint, which no request through the proxy may reach"};
}

// The Host header for the upstream: the normalised host the policy decided on (never the
// spelling the agent used), port omitted when default.
std::string host_header(const policy::Host& host, std::uint16_t port) {
  std::string h = host.name.find(':') != std::string::npos ? "[" + host.name + "]" : host.name;
  if (port != 80) h += ":" + std::to_string(port);
  return h;
}

}  // namespace

ClientSession::ClientSession(Server::Impl& impl, Worker& worker, tcp::socket socket)
    : impl_(impl), worker_(worker), stream_(std::move(socket)) {
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
  on_header(ec, used);
}

void ClientSession::refuse_head(const HeadProblem& p) {
  record_ = audit::AuditRecord{};
  record_.agent = who_.agent;
  record_.client_addr = peer_text_;
  exchange_.reset();
  allowed_.clear();
  req_ = Request{};
  const bool connect = head_check_.method() == "CONNECT";
  record_.kind = connect ? "connect" : "http";
  record_.method = head_check_.method();
  note_target(head_check_.target(), connect);
  std::string what = head_check_.method() + " " + head_check_.target().substr(0, 256);
  refuse({p.status, RefusalKind::error, head_check_.method().empty() ? std::string() : what, "request", p.reason, {}},
         "deny", true);
}

// The destination of a refused request, as far as it can be read, for its audit row.
void ClientSession::note_target(std::string_view target, bool connect) {
  const auto t = connect ? parse_connect_target(target) : parse_absolute_target(target);
  record_.host = t.host;
  record_.port = t.port;
  record_.path = t.path;
}

void ClientSession::on_header(beast::error_code ec, std::size_t bytes) {
  if (ec || parser_->is_done()) return on_request(ec, bytes);
  // A client that waits for "100 Continue" before sending its body gets it at once,
  // instead of waiting out its own timer.
  const auto expect = parser_->get()[http::field::expect];
  if (beast::iequals(expect, "100-continue") && parser_->get().version() >= 11) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                             [self = shared_from_this()](beast::error_code e, std::size_t n) {
                               if (e) return self->on_request(e, n);
                               self->read_body();
                             });
  }
  read_body();
}

void ClientSession::read_body() {
  stream_.expires_after(profile_->limits.idle_timeout);
  http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&ClientSession::on_request, shared_from_this()));
}

bool ClientSession::is_connect() const { return req_.method() == http::verb::connect; }

std::string ClientSession::what() const {
  return std::string(req_.method_string()) + " " + std::string(req_.target());
}

void ClientSession::on_request(beast::error_code ec, std::size_t) {
  record_ = audit::AuditRecord{};
  record_.agent = who_.agent;
  record_.client_addr = peer_text_;
  exchange_.reset();
  allowed_.clear();
  if (ec) {
    // A client going away between requests is normal, not a malformed request.
    if (!parser_->got_some() || ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return close_client();
    }
    record_.kind = "http";
    req_ = Request{};
    if (parser_->is_header_done()) {
      req_ = parser_->get();
      record_.method = std::string(req_.method_string());
      record_.kind = is_connect() ? "connect" : "http";
      note_target(req_.target(), is_connect());
    }
    if (ec == http::error::header_limit)
      return refuse({431, RefusalKind::error, {}, "request", "the request headers are larger than 64 KiB", {}},
                    "deny", true);
    if (ec == http::error::body_limit)
      return refuse({413, RefusalKind::error, {}, "request", "the request body is larger than 64 MiB", {}}, "deny",
                    true);
    return refuse({400, RefusalKind::error, {}, "request", describe_request_error(ec), {}}, "deny", true);
  }
  req_ = parser_->release();
  record_.method = std::string(req_.method_string());
  record_.kind = is_connect() ? "connect" : "http";
  client_keep_alive_ = !is_connect() && req_.keep_alive();
  if (impl_.is_stopping()) client_keep_alive_ = false;

  if (!handled_method(req_.method())) {
    return refuse({405, RefusalKind::error, what(), "method",
                   "netbox does not forward the method " + std::string(req_.method_string()), {}},
                  "deny", !client_keep_alive_);
  }
  target_ = is_connect() ? parse_connect_target(req_.target()) : parse_absolute_target(req_.target());
  if (!target_.error.empty()) {
    record_.host = target_.host;
    record_.port = target_.port;
    return refuse({400, RefusalKind::error, what(), "request", target_.error, {}}, "deny", true);
  }
  record_.port = target_.port;
  record_.path = target_.path;
  auto parsed = policy::parse_host(target_.host);
  if (!parsed) {
    record_.host = target_.host;
    return refuse({400, RefusalKind::error, what(), "host", "the host '" + target_.host + "' is not valid: " +
                                                                 parsed.error.message, {}},
                  "deny", true);
  }
  host_ = *parsed.host;
  record_.host = host_.name;
  route();
}

void ClientSession::route() {
  name_decision_ = policy::decide_name(*profile_, host_, target_.port);
  if (!name_decision_.lets_through()) {
    record_.rule = name_decision_.rule;
    record_.reason = name_decision_.reason;
    return refuse({403, RefusalKind::deny, what(), name_decision_.rule, name_decision_.reason, {}}, "deny",
                  !client_keep_alive_);
  }
  if (host_.is_ip()) return on_resolved(ResolveResult{{*host_.ip}, {}, false});
  if (auto it = policy_->pins.find(host_.name); it != policy_->pins.end())
    return on_resolved(ResolveResult{it->second, {}, false});
  const auto t0 = std::chrono::steady_clock::now();
  worker_.resolver->resolve(host_.name, [self = shared_from_this(), t0](ResolveResult r) {
    if (!r.from_cache) self->impl_.counters.dns_latency.observe(std::chrono::steady_clock::now() - t0);
    self->on_resolved(std::move(r));
  });
}

void ClientSession::on_resolved(ResolveResult r) {
  record_.decision = std::string(policy::to_string(name_decision_.verdict));
  record_.rule = name_decision_.rule;
  record_.reason = name_decision_.reason;
  if (!r.error.empty()) {
    impl_.counters.upstream_errors.fetch_add(1);
    return refuse({502, RefusalKind::error, what(), {}, r.error, {}}, record_.decision, !client_keep_alive_,
                  r.error);
  }
  std::vector<asio::ip::address> allowed;
  std::optional<policy::Decision> chosen;
  std::optional<policy::Decision> first_deny;
  std::string denied_addr;
  for (const auto& a : r.addresses) {
    auto d = policy::decide_address(*profile_, host_, target_.port, a);
    if (impl_.own.contains(a, target_.port)) d = own_endpoint_denial(a, target_.port);
    if (d.lets_through()) {
      allowed.push_back(a);
      if (!chosen) chosen = std::move(d);
    } else if (!first_deny) {
      first_deny = std::move(d);
      denied_addr = a.to_string();
    }
  }
  if (allowed.empty()) {
    record_.resolved_addr = denied_addr;
    record_.rule = first_deny->rule;
    record_.reason = first_deny->reason;
    return refuse({403, RefusalKind::deny, what(), first_deny->rule, first_deny->reason, {}}, "deny",
                  !client_keep_alive_);
  }
  // A report on either step is what the row must show; otherwise the address decision.
  policy::Decision final = name_decision_.verdict == policy::Verdict::report ? name_decision_ : *chosen;
  if (chosen->verdict == policy::Verdict::report) final = *chosen;
  admit(std::move(allowed), std::move(final));
}

void ClientSession::admit(std::vector<asio::ip::address> allowed, policy::Decision decision) {
  record_.decision = std::string(policy::to_string(decision.verdict));
  record_.rule = decision.rule;
  record_.reason = decision.reason;
  for (const auto& a : allowed) allowed_.emplace_back(a, target_.port);
  record_.resolved_addr = allowed.front().to_string();

  auto cap = impl_.caps.acquire(who_.agent, host_.name, policy_->base.limits, profile_->limits);
  if (!cap.token) {
    if (cap.rule == "limits.max_connections") impl_.counters.caps_hit_global.fetch_add(1);
    else if (cap.rule == "limits.max_connections_per_agent") impl_.counters.caps_hit_agent.fetch_add(1);
    else impl_.counters.caps_hit_host.fetch_add(1);
    record_.rule = cap.rule;
    record_.reason = cap.reason;
    return refuse({429, RefusalKind::cap, what(), cap.rule, cap.reason, 1u}, "deny", !client_keep_alive_);
  }
  // From here on the exchange holds the row (refusals complete it through exchange_), so
  // the session's record is handed over, not copied; on_request starts the next one.
  exchange_ = std::make_unique<Exchange>(impl_, std::move(record_));
  exchange_->cap = std::move(cap.token);
  exchange_->bytes_up = is_connect() ? 0 : req_.body().size();
  if (!exchange_->open()) return refuse_unaudited("the audit store did not accept the record of this request");
  if (impl_.options.audit_sync) {
    // Strict mode: nothing leaves until the decision row is durable. The callback runs on
    // the writer thread; the session continues on its own io thread.
    return impl_.writer->on_committed(exchange_->row(), [self = shared_from_this()](bool ok) {
      asio::post(self->stream_.get_executor(), [self, ok] {
        if (ok) return self->forward();
        self->refuse_unaudited("the audit store could not make the record of this request durable");
      });
    });
  }
  forward();
}

void ClientSession::refuse_unaudited(std::string why) {
  exchange_.reset();
  impl_.log.write("audit_refused", {{"host", host_.name}, {"agent", who_.agent}, {"reason", why}});
  // Fail closed: no connection. Any row already queued is completed by the Exchange.
  auto res = std::make_shared<Response>(
      make_refusal({503, RefusalKind::error, what(), "audit", std::move(why), {}}, req_.version(), false));
  refusal_ = res;
  http::async_write(stream_, *res, [self = shared_from_this()](beast::error_code e, std::size_t) {
    self->on_refusal_written(true, e);
  });
}

void ClientSession::forward() {
  if (is_connect()) return connect_upstream();
  // Reuse a pooled connection to one of the checked addresses, if there is one.
  for (const auto& ep : allowed_) {
    auto key = UpstreamPool::key(ep, host_.name);
    if (auto s = worker_.pool->take(key)) {
      pool_key_ = key;
      reused_upstream_ = true;
      if (ep != allowed_.front()) exchange_->record().resolved_addr = ep.address().to_string();
      upstream_.emplace(std::move(*s));
      return send_upstream();
    }
  }
  connect_upstream();
}

void ClientSession::connect_upstream() {
  reused_upstream_ = false;
  const auto t0 = std::chrono::steady_clock::now();
  dial(worker_.ioc, allowed_, profile_->limits.connect_timeout, [self = shared_from_this(), t0](DialResult r) {
    self->impl_.counters.connect_latency.observe(std::chrono::steady_clock::now() - t0);
    self->on_dialed(std::move(r));
  });
}

void ClientSession::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    impl_.counters.upstream_errors.fetch_add(1);
    return upstream_failed(r.failure == DialFailure::timeout ? 504 : 502, r.error);
  }
  exchange_->record().resolved_addr = r.endpoint.address().to_string();
  if (is_connect()) return start_tunnel(std::move(r.socket));
  pool_key_ = UpstreamPool::key(r.endpoint, host_.name);
  upstream_.emplace(std::move(r.socket));
  send_upstream();
}

void ClientSession::send_upstream() {
  out_.clear();
  append_forwarded_request(out_, req_, target_.path_and_query, host_header(host_, target_.port), req_.body().size());
  const std::array<asio::const_buffer, 2> pieces{asio::buffer(out_), asio::buffer(req_.body())};
  upstream_->expires_after(profile_->limits.idle_timeout);
  asio::async_write(*upstream_, pieces,
                    beast::bind_front_handler(&ClientSession::on_upstream_written, shared_from_this()));
}

void ClientSession::on_upstream_written(beast::error_code ec, std::size_t) {
  if (ec) {
    if (reused_upstream_) {
      upstream_.reset();
      return connect_upstream();  // the pooled connection had gone stale: dial afresh
    }
    impl_.counters.upstream_errors.fetch_add(1);
    if (ec == beast::error::timeout) return upstream_failed(504, "sending the request upstream timed out");
    return upstream_failed(502, "sending the request upstream failed: " + ec.message());
  }
  upstream_parser_.emplace();
  upstream_parser_->header_limit(kHeaderLimit);
  upstream_parser_->body_limit(boost::none);
  if (req_.method() == http::verb::head) upstream_parser_->skip(true);
  buffer_upstream_.clear();
  upstream_->expires_after(profile_->limits.idle_timeout);
  http::async_read_header(*upstream_, buffer_upstream_, *upstream_parser_,
                          beast::bind_front_handler(&ClientSession::on_upstream_header, shared_from_this()));
}

void ClientSession::on_upstream_header(beast::error_code ec, std::size_t) {
  if (ec) {
    if (reused_upstream_ && !upstream_parser_->got_some()) {
      upstream_.reset();
      return connect_upstream();
    }
    impl_.counters.upstream_errors.fetch_add(1);
    upstream_.reset();
    if (ec == beast::error::timeout)
      return upstream_failed(504, "the upstream did not answer within " +
                                      std::to_string(profile_->limits.idle_timeout.count()) + " ms");
    return upstream_failed(502, "the upstream's response was not valid HTTP: " + ec.message());
  }
  auto& res = upstream_parser_->get();
  response_status_ = static_cast<int>(res.result_int());
  if (response_status_ == 101) {
    // Upgrade was stripped from the request, so a switch of protocols is a broken upstream.
    impl_.counters.upstream_errors.fetch_add(1);
    upstream_.reset();
    return upstream_failed(502, "the upstream switched protocols (101) although no upgrade was asked for");
  }
  if (response_status_ / 100 == 1) {
    // An interim answer (103 Early Hints ...): drop it and wait for the final one, so it
    // can never be taken for the answer to the next request on a pooled connection.
    upstream_parser_.emplace();
    upstream_parser_->header_limit(kHeaderLimit);
    upstream_parser_->body_limit(boost::none);
    if (req_.method() == http::verb::head) upstream_parser_->skip(true);
    upstream_->expires_after(profile_->limits.idle_timeout);
    return http::async_read_header(*upstream_, buffer_upstream_, *upstream_parser_,
                                   beast::bind_front_handler(&ClientSession::on_upstream_header, shared_from_this()));
  }
  upstream_keep_alive_ = res.keep_alive() && res.version() == 11;
  const bool bodiless = req_.method() == http::verb::head || response_status_ / 100 == 1 ||
                        response_status_ == 204 || response_status_ == 304;
  const bool had_length = res.has_content_length();
  strip_hop_by_hop(res);
  res.version(req_.version());
  bool keep = client_keep_alive_;
  if (!bodiless && !had_length) {
    // Length unknown (chunked or until close): re-chunk for HTTP/1.1, close for 1.0.
    if (req_.version() >= 11) res.chunked(true);
    else keep = false;
  }
  client_keep_alive_ = keep;
  res.keep_alive(keep);
  chunked_ = res.chunked();
  out_.clear();
  append_response_head(out_, res);
  head_pending_ = true;
  if (!body_buf_) {
    body_buf_ = std::make_unique_for_overwrite<char[]>(kBodyPiece);
    // Room for whole pieces: each read_some then takes up to 64 KiB from the socket, not
    // the 512 bytes an empty buffer would ask for (one write to the agent per read).
    buffer_upstream_.reserve(kBodyPiece);
  }
  if (!bodiless && buffer_upstream_.size() > 0 && !upstream_parser_->is_done()) {
    // Body bytes came with the header: parse them before answering, so a body whose
    // framing is broken from the start (bad chunk size) gets a 502, not a cut-off 200.
    header_held_ = true;
    return read_body_chunk();
  }
  send_piece(0);  // the head at once (a stream's first bytes may be a while), or the whole bodiless answer
}

void ClientSession::read_body_chunk() {
  if (upstream_parser_->is_done()) return send_piece(0);
  auto& body = upstream_parser_->get().body();
  body.data = body_buf_.get();
  body.size = kBodyPiece;
  if (buffer_upstream_.size() > 0) {
    // Bytes that came with the header (most small answers) are parsed here and now;
    // async_read_some would only post the same parse through the io_context. Only a
    // parser that needs more than is here goes on to read the socket.
    beast::error_code ec;
    const std::size_t used = upstream_parser_->put(buffer_upstream_.data(), ec);
    buffer_upstream_.consume(used);
    if (ec != http::error::need_more) return on_body_chunk(ec, used);
  }
  upstream_->expires_after(profile_->limits.idle_timeout);
  // read_some, not read: whatever arrived goes on at once. A whole read would hold a
  // trickling stream (server-sent events, tokens) until 64 KiB had gathered.
  http::async_read_some(*upstream_, buffer_upstream_, *upstream_parser_,
                        beast::bind_front_handler(&ClientSession::on_body_chunk, shared_from_this()));
}

void ClientSession::on_body_chunk(beast::error_code ec, std::size_t) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) {
    impl_.counters.upstream_errors.fetch_add(1);
    upstream_.reset();
    if (header_held_) {  // nothing went to the agent yet: answer instead of cutting
      header_held_ = false;
      upstream_parser_.reset();
      if (ec == beast::error::timeout) return upstream_failed(504, "the upstream stopped sending the body (timeout)");
      return upstream_failed(502, "the upstream's response body was not valid HTTP: " + ec.message());
    }
    return response_done(ec == beast::error::timeout ? "the upstream stopped sending the body (timeout)"
                                                     : "reading the response body failed: " + ec.message());
  }
  auto& body = upstream_parser_->get().body();
  const auto got = kBodyPiece - body.size;
  // Only framing arrived (a chunk header): nothing to pass on yet, and an empty piece
  // must not be written, where it would read as the last chunk.
  if (got == 0 && !upstream_parser_->is_done()) return read_body_chunk();
  exchange_->bytes_down += got;
  send_piece(got);
}

// One write to the agent: the head if it has not gone yet, `got` body bytes from
// body_buf_ (framed as a chunk when re-chunking; an empty piece is never a chunk of its
// own, where it would read as the last one), and the end of the body once the upstream's
// has ended.
void ClientSession::send_piece(std::size_t got) {
  header_held_ = false;
  response_started_ = true;
  last_piece_ = upstream_parser_->is_done();
  if (!head_pending_) out_.clear();
  head_pending_ = false;
  std::string_view tail;
  if (chunked_) {
    if (got > 0) append_chunk_size(out_, got);
    tail = got > 0 ? (last_piece_ ? "\r\n0\r\n\r\n" : "\r\n") : (last_piece_ ? "0\r\n\r\n" : "");
  }
  const std::array<asio::const_buffer, 3> pieces{asio::buffer(out_), asio::buffer(body_buf_.get(), got),
                                                 asio::buffer(tail.data(), tail.size())};
  stream_.expires_after(profile_->limits.idle_timeout);
  asio::async_write(stream_, pieces, beast::bind_front_handler(&ClientSession::on_piece_written, shared_from_this()));
}

void ClientSession::on_piece_written(beast::error_code ec, std::size_t) {
  if (ec) return response_done("writing the response to the agent failed: " + ec.message());
  if (!last_piece_) return read_body_chunk();
  response_done({});
}

// The exchange ends: complete the row, pool the upstream connection if it is clean,
// and read the agent's next request (or close).
void ClientSession::response_done(std::string error) {
  const bool clean = error.empty();
  if (upstream_) {
    if (clean && upstream_keep_alive_ && upstream_parser_->is_done() && buffer_upstream_.size() == 0)
      worker_.pool->put(pool_key_, upstream_->release_socket());
    upstream_.reset();
  }
  upstream_parser_.reset();
  exchange_->finish(response_status_, error);
  exchange_.reset();
  const bool cut = !clean && response_started_;
  response_started_ = false;
  if (cut) return abort_client();
  if (!clean || !client_keep_alive_) return close_client();
  read_request();
}

void ClientSession::start_tunnel(tcp::socket upstream) {
  // Bytes the agent sent after the CONNECT header (a pipelined TLS hello) go first.
  stream_.expires_never();
  std::string early(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  auto t = std::make_shared<Tunnel>(impl_, stream_.release_socket(), std::move(upstream), std::move(early),
                                    std::move(exchange_), profile_->limits.idle_timeout);
  t->start();
}

void ClientSession::upstream_failed(unsigned status, std::string error) {
  refuse({status, RefusalKind::error, what(), {}, error, {}}, exchange_ ? exchange_->record().decision : record_.decision,
         !client_keep_alive_ || is_connect(), error);
}

void ClientSession::refuse(Refusal r, std::string decision_text, bool close, std::string error) {
  if (is_connect()) close = true;  // a refused CONNECT never becomes a tunnel
  auto res = std::make_shared<Response>(make_refusal(r, req_.version() ? req_.version() : 11, !close));
  if (exchange_) {
    exchange_->finish(static_cast<int>(r.status), error.empty() ? r.reason : error);
    exchange_.reset();
  } else {
    auto rec = record_;
    rec.decision = std::move(decision_text);
    if (rec.rule.empty()) rec.rule = r.rule;
    if (rec.reason.empty()) rec.reason = r.reason;
    rec.status = static_cast<int>(r.status);
    rec.error = std::move(error);
    record_refusal(impl_, std::move(rec));
  }
  refusal_ = res;
  stream_.expires_after(std::chrono::seconds(30));
  http::async_write(stream_, *res, [self = shared_from_this(), close](beast::error_code e, std::size_t) {
    self->on_refusal_written(close, e);
  });
}

void ClientSession::on_refusal_written(bool close, beast::error_code ec) {
  refusal_.reset();
  if (ec || close) return close_client();
  read_request();
}

void ClientSession::close_client() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.close();
}

void ClientSession::abort_client() {
  beast::error_code ec;
  stream_.socket().set_option(asio::socket_base::linger(true, 0), ec);
  stream_.close();
}

}  // namespace netbox::proxy
