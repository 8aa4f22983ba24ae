#include "socks_session.hpp"

#include "admission_steps.hpp"
#include "client_identity.hpp"
#include "audit_room.hpp"
#include "http_session.hpp"
#include "inspected_tunnel.hpp"
#include "policy_answer.hpp"
#include "target.hpp"
#include "tunnel.hpp"

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
      slot_(std::move(slot)),
      stream_(std::move(socket)),
      timer_(stream_.get_executor()),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl) {
  impl_.counters.active_connections.fetch_add(1);
}

SocksSession::~SocksSession() { impl_.counters.active_connections.fetch_sub(1); }

socks::Reply SocksSession::reply_for(Outcome outcome) {
  // A refusal by the policy or a limit is "not allowed"; anything else failed.
  return outcome == Outcome::deny || outcome == Outcome::cap ? socks::Reply::not_allowed
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
  boost::system::error_code ec;
  peer_ = stream_.socket().remote_endpoint(ec);
  peer_text_ = authority(canonical_address(peer_.address()).to_string(), peer_.port());
  // As on the HTTP listener: the agent is its address, its policy the one in force now.
  auto who = identify_client(impl_, stream_.socket(), "socks");
  if (!who) return;  // on an agent's own listener, from none of its addresses
  who_ = std::move(*who);
  policy_ = impl_.current_policy();
  profile_ = who_.profile.empty() ? &policy_->base : &policy_->profile_for(who_.profile);
  admission_.bind(*policy_, *profile_, who_);
  exchange_.connection(who_.agent, peer_text_, impl_.metric_label(who_), who_.origin);
  deadline_ = std::chrono::steady_clock::now() + profile_->limits.header_timeout;
  read_more();
}

void SocksSession::read_more() {
  stream_.expires_at(deadline_);
  stream_.async_read_some(asio::buffer(in_.data() + have_, in_.size() - have_),
                          beast::bind_front_handler(&SocksSession::on_read, shared_from_this()));
}

void SocksSession::on_read(boost::system::error_code ec, std::size_t bytes) {
  if (ec) {
    if (ec == beast::error::timeout)
      impl_.log.write("header_timeout", {{"client", peer_text_},
                                         {"agent", who_.agent},
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
        impl_.log.write("socks_refused", {{"client", peer_text_}, {"agent", who_.agent}, {"reason", g.problem}});
        if (g.silent) return close();
        return send_handshake(socks::method_selection(socks::Method::none_acceptable), true);
      }
      consume(g.used);
      stage_ = g.method == socks::Method::password ? Stage::credentials : Stage::request;
      return send_handshake(socks::method_selection(g.method), false);
    }
    case Stage::credentials: {
      // Read, never checked: the agent is its address (see socks_request.hpp).
      const auto c = socks::read_credentials(got);
      if (c.status == socks::Status::need_more) return read_more();
      if (c.status == socks::Status::refused) {
        impl_.log.write("socks_refused", {{"client", peer_text_}, {"agent", who_.agent}, {"reason", c.problem}});
        return send_handshake(socks::credentials_status(false), true);
      }
      consume(c.used);
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
  // Back pressure, as on the HTTP listener: the row waits for room, and so does the agent.
  if (audit_room_or_wait(*impl_.writer, stream_.get_executor(), [self = shared_from_this()] { self->admit(); }))
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
  decided_outcome_ = yes.outcome;
  decided_ = yes.decision;
  // Fail closed, as on the HTTP listener: a row the store did not take is no connection.
  open_row(impl_, exchange_, yes, allowed_, host_.name, who_.agent, stream_.get_executor(),
           [self = shared_from_this()](std::string unaudited) {
             if (unaudited.empty()) return self->connect_upstream();
             self->send_reply(socks::Reply::general_failure);
           });
}

void SocksSession::connect_upstream() {
  if (policy::decide_tunnel(*profile_, {host_.name, port_, decided_}, policy::Carried::opaque).inspect)
    return start_inspection();
  dial_admitted(impl_, worker_, allowed_, profile_->limits,
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
                      read_first_flight(self->stream_.socket(), self->timer_, self->profile_->limits.header_timeout,
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
    FixedDestination fixed{"socks",
                           {policy_, profile_, host_, port_, std::move(allowed_), decided_outcome_,
                            std::move(decided_), who_.agent, peer_text_, impl_.metric_label(who_), who_.tripwire, false},
                           std::move(exchange_), std::move(f.bytes), std::move(dialled_)};
    return std::make_shared<ClientSession>(impl_, worker_, stream_.release_socket(), std::move(slot_),
                                           std::move(fixed))
        ->start();
  }
  // As for CONNECT: a blind tunnel to a host some rule names would carry requests no rule
  // could check (an inspected host never gets here).
  auto no = check_first_flight(f, host_, "the name the SOCKS request asked for");
  auto tunnel = policy::decide_tunnel(*profile_, {host_.name, port_, decided_}, policy::Carried::opaque);
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
  exchange_.client_slot = std::move(slot_);
  exchange_.settle();
  auto t = std::make_shared<Tunnel>(impl_, stream_.release_socket(), std::move(dialled_->socket), std::move(f.bytes),
                                    std::move(exchange_), profile_->limits.idle_timeout);
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
  exchange_.client_slot = std::move(slot_);
  static constexpr auto kSucceeded = socks::reply(socks::Reply::succeeded);
  InspectionScope scope{policy_, profile_, host_, port_, allowed_, decided_outcome_, decided_,
                        who_.agent, peer_text_, impl_.metric_label(who_), who_.tripwire};
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
