#include "doors/socks_session.hpp"

#include "pipeline/admission_steps.hpp"
#include "http/http_session.hpp"
#include "inspect/inspected_tunnel.hpp"
#include "pipeline/policy_answer.hpp"
#include "pipeline/target.hpp"
#include "upstream/tunnel.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/policy/decide_request.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

SocksSession::SocksSession(ProxyRuntime& impl, Worker& worker, tcp::socket socket, ClientSlot slot)
    : impl_(impl),
      worker_(worker),
      stream_(std::move(socket)),
      timer_(stream_.get_executor()),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl) {
  conn_.slot = std::move(slot);
  impl_.counters.active_connections.fetch_add(1);
}

SocksSession::~SocksSession() { impl_.counters.active_connections.fetch_sub(1); }

socks::Reply SocksSession::reply_for(Outcome outcome) {
  // A refusal by the policy or a limit is "not allowed"; anything else failed.
  return refused_by_policy(outcome) || outcome == Outcome::cap ? socks::Reply::not_allowed
                                                             : socks::Reply::general_failure;
}

socks::Reply SocksSession::reply_for(DialFailure failure) {
  switch (failure) {
    case DialFailure::refused: return socks::Reply::connection_refused;
    case DialFailure::timeout: return socks::Reply::ttl_expired;
    case DialFailure::other: return socks::Reply::host_unreachable;
    case DialFailure::none:
    case DialFailure::descriptors: break;
  }
  return socks::Reply::general_failure;
}

void SocksSession::start() {
  open_agent_connection(impl_, stream_.socket(), conn_.slot, DoorKind::socks,
                        [self = shared_from_this()](AgentConnection c) {
                          self->conn_ = std::move(c);
                          self->conn_.bind(self->admission_, self->exchange_);
                          self->deadline_ = std::chrono::steady_clock::now() + self->conn_.profile->limits.header_timeout;
                          self->read_more();
                        });
}

void SocksSession::read_more() {
  stream_.expires_at(deadline_);
  stream_.async_read_some(asio::buffer(in_.data() + have_, in_.size() - have_),
                          beast::bind_front_handler(&SocksSession::on_read, shared_from_this()));
}

void SocksSession::on_read(boost::system::error_code ec, std::size_t bytes) {
  if (ec) {
    if (ec == beast::error::timeout)
      impl_.log.write("header_timeout", {{"client", conn_.peer_text},
                                         {"agent", conn_.who.agent},
                                         {"listener", "socks"},
                                         {"received", std::to_string(have_)}});
    return close();
  }
  have_ += bytes;
  step();
}

void SocksSession::consume(std::size_t used) {
  std::copy(in_.begin() + static_cast<std::ptrdiff_t>(used), in_.begin() + static_cast<std::ptrdiff_t>(have_),
            in_.begin());
  have_ -= used;
}

void SocksSession::step() {
  const std::span<const std::uint8_t> got(in_.data(), have_);
  switch (stage_) {
    case Stage::greeting: {
      const auto g = socks::read_greeting(got);
      if (g.status == socks::Status::need_more) return read_more();
      if (g.status == socks::Status::refused) {
        impl_.log.write("socks_refused", {{"client", conn_.peer_text}, {"agent", conn_.who.agent}, {"reason", g.problem}});
        if (g.silent) return close();
        return send_handshake(socks::method_selection(socks::Method::none_acceptable), true);
      }
      consume(g.used);
      auto method = g.method;
      if (needs_token()) {
        if (g.password_offered) method = socks::Method::password;
        else if (!impl_.client_tokens->allow_anonymous())
          return refuse_token("the client offered no username/password to carry its client token",
                              socks::method_selection(socks::Method::none_acceptable));
      }
      stage_ = method == socks::Method::password ? Stage::credentials : Stage::request;
      return send_handshake(socks::method_selection(method), false);
    }
    case Stage::credentials: {
      // The password is a client token where one is asked for, else never checked.
      const auto c = socks::read_credentials(got);
      if (c.status == socks::Status::need_more) return read_more();
      if (c.status == socks::Status::refused) {
        impl_.log.write("socks_refused", {{"client", conn_.peer_text}, {"agent", conn_.who.agent}, {"reason", c.problem}});
        return send_handshake(socks::credentials_status(false), true);
      }
      consume(c.used);
      if (needs_token() && !take_token(c.password)) return;
      stage_ = Stage::request;
      return send_handshake(socks::credentials_status(true), false);
    }
    case Stage::request: {
      auto r = socks::read_request(got);
      if (r.status == socks::Status::need_more) {
        if (have_ == in_.size()) break;  // cannot happen: a request is at most 262 bytes
        return read_more();
      }
      return take_request(std::move(r));
    }
  }
  close();
}

void SocksSession::send_handshake(std::array<std::uint8_t, 2> bytes, bool then_close) {
  std::copy(bytes.begin(), bytes.end(), out_.begin());
  stream_.expires_at(deadline_);
  asio::async_write(stream_, asio::buffer(out_.data(), 2),
                    [self = shared_from_this(), then_close](boost::system::error_code ec, std::size_t) {
                      if (ec || then_close) return self->close();
                      self->step();
                    });
}

void SocksSession::take_request(socks::Request r) {
  exchange_.begin();
  exchange_.request(true, socks::command_name(r.command));
  exchange_.kind("socks");
  // A domain name is any bytes the agent chose: escaped until parse_host has vetted it.
  exchange_.target(r.host, r.port, {}, true);
  what_ = socks::command_name(r.command) + " " + authority(audit::escape_controls(r.host), r.port);
  if (r.status == socks::Status::refused) {
    const Refusal no{400, Outcome::error, what_, "request", r.problem, {}};
    return refuse(r.reply, no, r.problem);
  }
  consume(r.used);
  auto parsed = policy::parse_host(r.host);
  if (!parsed) {
    const Refusal no{400, Outcome::error, what_, "host",
                     "the host '" + audit::escape_controls(r.host) + "' is not valid: " + parsed.error.message, {}};
    return refuse(socks::Reply::general_failure, no);
  }
  host_ = *parsed.host;
  port_ = r.port;
  exchange_.host(host_.name);
  admit();
}

void SocksSession::admit() {
  decide(admission_, worker_, impl_.counters, host_, port_,
         [self = shared_from_this()](AdmissionResult r) { self->act_on(std::move(r)); });
}

void SocksSession::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    no->refusal.what = what_;
    // A name that does not resolve is unreachable; any other refusal is the ruleset's or netbox's.
    const auto code = !no->error.empty() && no->refusal.outcome == Outcome::error ? socks::Reply::host_unreachable
                                                                                 : reply_for(no->refusal.outcome);
    return refuse(code, no->refusal, std::move(no->error));
  }
  auto& yes = std::get<Admitted>(result);
  decided_ = yes.decision;
  // Fail closed, as on the HTTP listener: a row the store did not take is no connection.
  open_row(impl_, exchange_, yes, allowed_, host_.name, conn_.who.agent, stream_.get_executor(),
           [self = shared_from_this()](std::string unaudited) {
             if (unaudited.empty()) return self->connect_upstream();
             self->send_reply(socks::Reply::general_failure);
           });
}

void SocksSession::connect_upstream() {
  if (policy::decide_tunnel(*conn_.profile, {host_.name, port_, decided_}, policy::Carried::opaque).inspect)
    return start_inspection();
  dial_admitted(impl_, worker_, allowed_, conn_.profile->limits,
                [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
}

void SocksSession::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    impl_.counters.upstream_errors.fetch_add(1);
    return refuse(reply_for(r.failure), {http_status(r.failure), Outcome::error, what_, {}, r.error, {}}, r.error);
  }
  exchange_.dialled(r.endpoint.address().to_string());
  dialled_.emplace(std::move(r));
  stream_.expires_never();
  // Bytes the agent sent right after its request, before any reply (optimistic data),
  // are the start of its first message: sniffed and checked like one.
  std::string early(reinterpret_cast<const char*>(in_.data()), have_);
  have_ = 0;
  send_succeeded(std::move(early));
}

// "Succeeded", then the agent's first message says what it speaks (first_flight.hpp).
void SocksSession::send_succeeded(std::string early) {
  out_ = socks::reply(socks::Reply::succeeded);
  asio::async_write(stream_.socket(), asio::buffer(out_),
                    [self = shared_from_this(), early = std::move(early)](boost::system::error_code ec,
                                                                          std::size_t) mutable {
                      if (ec) {
                        self->exchange_.finish(std::nullopt, "answering the SOCKS request failed: " + ec.message(),
                                               true);
                        return self->close();
                      }
                      read_first_flight(self->stream_.socket(), self->timer_, self->conn_.profile->limits.header_timeout,
                                        agent_must_speak_first(self->port_, false),
                                        [self](FirstFlight f) { self->on_first_flight(std::move(f)); },
                                        std::move(early));
                    });
}

void SocksSession::on_first_flight(FirstFlight f) {
  if (!f.error.empty()) {
    exchange_.finish(std::nullopt, std::move(f.error), true);
    return close();
  }
  if (f.kind == FirstFlight::Kind::http) {
    // Plain HTTP: each request decided with `rules` and forwarded by the request loop,
    // one row each under this connection's, the first over the connection just dialled.
    FixedDestination fixed{"socks", InspectionScope::of(conn_, host_, port_, std::move(allowed_), std::move(decided_)),
                           std::move(exchange_), std::move(f.bytes), std::move(dialled_)};
    return std::make_shared<ClientSession>(impl_, worker_, stream_.release_socket(), std::move(conn_),
                                           std::move(fixed))
        ->start();
  }
  // As for CONNECT: a blind tunnel to a host some rule names would carry requests no rule
  // could check (an inspected host never gets here).
  auto no = check_first_flight(f, host_, "the name the SOCKS request asked for");
  auto tunnel = policy::decide_tunnel(*conn_.profile, {host_.name, port_, decided_}, policy::Carried::opaque);
  if (!no && tunnel.refused()) no = refusal_of(tunnel.decision, tunnel.status);
  if (no) {
    exchange_.overrule(no->outcome, no->rule, no->reason);
    exchange_.finish(no->status, no->reason);
    boost::system::error_code ignored;
    stream_.socket().set_option(asio::socket_base::linger(true, 0), ignored);
    return stream_.close();
  }
  // Report mode: the row shows what the rules would have refused, as a CONNECT's does.
  if (tunnel.decision.rule != decided_.rule)
    exchange_.overrule(outcome_of(tunnel.decision.verdict), tunnel.decision.rule, tunnel.decision.reason);
  exchange_.client_slot = std::move(conn_.slot);
  exchange_.settle();
  auto t = std::make_shared<Tunnel>(impl_, stream_.release_socket(), std::move(dialled_->socket), std::move(f.bytes),
                                    std::move(exchange_), conn_.profile->limits.idle_timeout);
  t->start(false);
}

// The host is inspected: netbox answers "succeeded" itself and terminates the agent's
// TLS, exactly as for an inspected CONNECT (inspected_tunnel.hpp).
void SocksSession::start_inspection() {
  // The policy guard lets `inspect` in only with a CA; never a blind tunnel instead.
  if (!impl_.inspector) {
    const std::string why = "netbox has no CA loaded to inspect " + host_.name;
    return refuse(socks::Reply::general_failure, {503, Outcome::error, what_, {}, why, {}}, why);
  }
  std::string early(reinterpret_cast<const char*>(in_.data()), have_);
  have_ = 0;
  stream_.expires_never();
  exchange_.client_slot = std::move(conn_.slot);
  static constexpr auto kSucceeded = socks::reply(socks::Reply::succeeded);
  auto scope = InspectionScope::of(conn_, host_, port_, allowed_, decided_);
  auto t = std::make_shared<InspectedTunnel>(
      impl_, worker_, stream_.release_socket(),
      std::string(reinterpret_cast<const char*>(kSucceeded.data()), kSucceeded.size()), std::move(early),
      std::move(exchange_), std::move(scope));
  t->start();
}

void SocksSession::refuse(socks::Reply code, const Refusal& r, std::string error) {
  exchange_.refuse(r, std::move(error));
  send_reply(code);
}

bool SocksSession::needs_token() const { return impl_.client_tokens && conn_.who.is_anonymous(); }

bool SocksSession::take_token(const std::string& password) {
  auto v = impl_.client_tokens->identify(password, *conn_.policy);
  if (!v.who) {
    refuse_token(std::move(v.why), socks::credentials_status(false));
    return false;
  }
  if (v.who->is_anonymous()) return true;
  conn_.become(std::move(*v.who), impl_);
  conn_.bind(admission_, exchange_);
  return true;
}

// The row of a client refused for its token: no request was read, so it names the handshake.
void SocksSession::refuse_token(std::string why, std::array<std::uint8_t, 2> answer) {
  exchange_.begin();
  exchange_.kind("socks");
  auto no = refusal_of(policy::Decision::refused("client_token", std::move(why)), 407);
  no.what = "SOCKS5 authentication";
  exchange_.refuse(no, {});
  send_handshake(answer, true);
}

void SocksSession::send_reply(socks::Reply code) {
  out_ = socks::reply(code);
  stream_.expires_after(std::chrono::seconds(30));
  asio::async_write(stream_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code, std::size_t) {
    self->close();
  });
}

void SocksSession::close() {
  boost::system::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.close();
}

}  // namespace netbox::proxy
