#include "http_session.hpp"

#include "admission_steps.hpp"
#include "client_identity.hpp"
#include "audit_room.hpp"
#include "credentials.hpp"
#include "first_flight.hpp"
#include "head_writer.hpp"
#include "headers.hpp"
#include "policy_answer.hpp"
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

}  // namespace

ClientSession::ClientSession(ProxyRuntime& impl, Worker& worker, tcp::socket socket, ClientSlot slot)
    : impl_(impl),
      worker_(worker),
      slot_(std::move(slot)),
      stream_(std::move(socket)),
      admission_(impl.own, impl.caps, impl.counters),
      exchange_(impl),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }) {
  impl_.counters.active_connections.fetch_add(1);
}

ClientSession::ClientSession(ProxyRuntime& impl, Worker& worker, tcp::socket socket, ClientSlot slot,
                             FixedDestination fixed)
    : ClientSession(impl, worker, std::move(socket), std::move(slot)) {
  fixed_.emplace(std::move(fixed));
}

ClientSession::~ClientSession() {
  impl_.counters.active_connections.fetch_sub(1);
  // The connection's row is complete when the agent's connection ends; its requests' rows
  // carry the bytes.
  if (fixed_) fixed_->connection.finish(std::nullopt);
}

void ClientSession::start() {
  boost::system::error_code ec;
  peer_ = stream_.socket().remote_endpoint(ec);
  peer_text_ = endpoint_text(peer_);  // once per connection: every request's row carries it
  // Identity and policy are fixed per connection: a reload applies to new connections.
  auto who = identify_client(impl_, stream_.socket(), fixed_ ? "capture" : "http");
  if (!who) return;  // on an agent's own listener, from none of its addresses
  who_ = std::move(*who);
  policy_ = impl_.current_policy();
  profile_ = who_.profile.empty() ? &policy_->base : &policy_->profile_for(who_.profile);
  admission_.bind(*policy_, *profile_, who_);
  exchange_.connection(who_.agent, peer_text_, impl_.metric_label(who_));
  pool_scope_ = UpstreamPool::scope(who_.agent, peer_.address());
  if (fixed_) {
    // The policy the connection was admitted under decides its requests too.
    policy_ = fixed_->scope.policy;
    profile_ = fixed_->scope.profile;
    admission_.bind(*policy_, *profile_, who_);
    const auto& early = fixed_->early;
    buffer_.commit(asio::buffer_copy(buffer_.prepare(early.size()), asio::buffer(early)));
    fixed_->early.clear();
  }
  read_request();
}

void ClientSession::read_request() {
  // Back pressure: while the audit queue is full, nothing more is read from this client
  // (each request makes a row), so a flood slows its sender down instead of losing rows
  // or having others refused. A failing store says there is room: insert() then refuses.
  if (!audit_room_or_wait(*impl_.writer, stream_.get_executor(), [self = shared_from_this()] { self->read_request(); }))
    return;
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
  note_request(connect, head_check_.method(), true);
  note_target(head_check_.target(), connect);
  std::string what = head_check_.method() + " " + head_check_.target().substr(0, 256);
  refuse({p.status, Outcome::error, head_check_.method().empty() ? std::string() : what, "request", p.reason, {}}, true);
}

// The destination of a refused request, as far as it can be read, for its audit row:
// escaped, since a target refused before Beast parsed it may hold any byte.
void ClientSession::note_target(std::string_view target, bool connect) {
  if (fixed_) {
    const auto q = target.find('?');
    return exchange_.target(fixed_->scope.host.name, fixed_->scope.port, target.substr(0, q), true);
  }
  const auto t = connect ? parse_connect_target(target) : parse_absolute_target(target);
  exchange_.target(t.host, t.port, t.path, true);
}

void ClientSession::note_request(bool connect, std::string_view method, bool escape) {
  exchange_.request(connect, method, escape);
  if (!fixed_) return;
  exchange_.kind(fixed_->kind);
  exchange_.parent(fixed_->connection.row());
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
      note_request(is_connect(), req_.method_string());
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
  note_request(is_connect(), req_.method_string());
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
  if (fixed_) return take_fixed_target();
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
  if (tripped()) return;
  admit();
}

// A credential's placeholder on its way to a host not listed for it (credentials.hpp).
// Every plain HTTP request of every door passes here once its host is known: the proxy
// door's, a captured connection's and a SOCKS5 one's (a FixedDestination).
bool ClientSession::tripped() {
  if (!who_.tripwire || is_connect()) return false;
  auto r = who_.tripwire->check_request(host_.name, target_.port, req_, target_.path_and_query);
  if (!r) return false;
  r->what = what();
  refuse(std::move(*r), !client_keep_alive_);
  return true;
}

// The destination is the connection's: the target must be origin-form, the Host header
// the admitted name. The connection's admission stands for each request (its addresses,
// decision and cap slot); `rules` still decide each one, in act_on.
void ClientSession::take_fixed_target() {
  const auto& scope = fixed_->scope;
  host_ = scope.host;
  const std::string_view target = req_.target();
  exchange_.target(host_.name, scope.port, target.substr(0, target.find('?')), true);
  exchange_.host(host_.name);
  if (is_connect() || target.empty() || target.front() != '/')
    return refuse({400, Outcome::error, what(), "request",
                   "this connection goes to " + authority(host_.name, scope.port) +
                       " already: requests on it have an origin-form target (\"/path\")",
                   {}},
                  true);
  // A literal has no other name to disagree with.
  if (!host_.is_ip()) {
    std::vector<std::string_view> values;
    for (auto [it, end] = req_.equal_range(http::field::host); it != end; ++it) values.push_back(it->value());
    if (auto no = check_host_headers(values, host_.name)) {
      no->what = what();
      return refuse(std::move(*no), true);
    }
  }
  target_ = Target{host_.name, scope.port, std::string(target), std::string(target.substr(0, target.find('?'))), {}};
  if (tripped()) return;
  Admitted yes;
  yes.outcome = scope.outcome;
  yes.decision = scope.decision;
  yes.endpoints = scope.endpoints;
  act_on(std::move(yes));
}

void ClientSession::admit() {
  decide(admission_, worker_, impl_.counters, host_, target_.port,
         [self = shared_from_this()](AdmissionResult r) { self->act_on(std::move(r)); });
}

void ClientSession::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    no->refusal.what = what();
    return refuse(std::move(no->refusal), !client_keep_alive_, std::move(no->error));
  }
  auto& yes = std::get<Admitted>(result);
  if (auto no = apply_request_rules(yes)) {
    exchange_.refused(*no);
    no->refusal.what = what();
    return refuse(std::move(no->refusal), !client_keep_alive_);
  }
  // An inspected tunnel's requests start from the CONNECT's decision.
  if (is_connect()) {
    decided_outcome_ = yes.outcome;
    decided_ = yes.decision;
  }
  // From here on the row is open: a refusal completes it as error.
  open_row(impl_, exchange_, yes, allowed_, host_.name, who_.agent, stream_.get_executor(),
           [self = shared_from_this()](std::string unaudited) {
             if (unaudited.empty()) return self->forward();
             self->refuse_unaudited(std::move(unaudited));
           });
}

// The host is let through; the policy still decides the request (`rules`) or the
// tunnel (policy/decide_request.hpp). A request goes with the canonical path it matched.
std::optional<Refused> ClientSession::apply_request_rules(Admitted& yes) {
  const policy::Admitted at{host_.name, target_.port, yes.decision};
  if (is_connect()) {
    auto t = policy::decide_tunnel(*profile_, at, policy::Carried::opaque);
    return take_decision(yes, std::move(t.decision), t.status);
  }
  auto r = policy::decide_request(*profile_, at, req_.method_string(), target_.path_and_query);
  if (!r.refused() && !r.path.empty()) {
    target_.path_and_query = std::move(r.path_and_query);
    target_.path = std::move(r.path);
    exchange_.target(host_.name, target_.port, target_.path);
  }
  return take_decision(yes, std::move(r.decision), r.status);
}

void ClientSession::refuse_unaudited(std::string why) {
  auto res = std::make_shared<Response>(
      make_refusal({503, Outcome::error, what(), "audit", std::move(why), {}}, req_.version(), false));
  refusal_ = res;
  http::async_write(stream_, *res, [self = shared_from_this()](beast::error_code e, std::size_t) {
    self->on_refusal_written(true, e);
  });
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
