#include "doors/socks_session.hpp"

#include "doors/socks_answer.hpp"

#include "pipeline/policy_answer.hpp"
#include "pipeline/target.hpp"
#include "pipeline/target_step.hpp"

#include "netbox/audit/printable.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

SocksSession::SocksSession(DoorServices& impl, Worker& worker, tcp::socket socket, ClientSlot slot)
    : impl_(impl), worker_(worker), stream_(std::move(socket)), exchange_(impl) {
  conn_.slot = std::move(slot);
  impl_.counters.active_connections.fetch_add(1);
}

SocksSession::~SocksSession() { impl_.counters.active_connections.fetch_sub(1); }

void SocksSession::start() {
  open_agent_connection(impl_, stream_.socket(), conn_.slot, DoorKind::socks,
                        [self = shared_from_this()](AgentConnection c) {
                          self->conn_ = std::move(c);
                          self->conn_.bind(self->exchange_);
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
      impl_.log.write(log_event::header_timeout, {{log_key::client, conn_.peer_text},
                                                  {log_key::agent, conn_.who.agent},
                                                  {log_key::listener, "socks"},
                                                  {log_key::received, std::to_string(have_)}});
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
        impl_.log.write(
            log_event::socks_refused,
            {{log_key::client, conn_.peer_text}, {log_key::agent, conn_.who.agent}, {log_key::reason, g.problem}});
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
        impl_.log.write(
            log_event::socks_refused,
            {{log_key::client, conn_.peer_text}, {log_key::agent, conn_.who.agent}, {log_key::reason, c.problem}});
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

// The request read is the target: it goes to the step every door shares (target_step.hpp),
// admission, the row, then the HTTP loop, an inspected or a blind tunnel, or a refusal.
// SOCKS5 only says how it answers (socks_answer.hpp).
void SocksSession::take_request(socks::Request r) {
  exchange_.begin();
  exchange_.request(true, socks::command_name(r.command));
  exchange_.kind("socks");
  // A domain name is any bytes the agent chose: escaped until parse_host has vetted it.
  exchange_.target(r.host, r.port, {}, true);
  auto what = socks::command_name(r.command) + " " + authority(audit::escape_controls(r.host), r.port);
  if (r.status == socks::Status::refused)
    return refuse(r.reply, {400, Outcome::error, what, "request", r.problem, {}}, r.problem);
  consume(r.used);
  auto parsed = policy::parse_host(r.host);
  if (!parsed)
    return refuse(socks::Reply::general_failure,
                  {400,
                   Outcome::error,
                   what,
                   "host",
                   "the host '" + audit::escape_controls(r.host) + "' is not valid: " + parsed.error.message,
                   {}});
  exchange_.host(parsed.host->name);
  // Bytes the agent sent right after its request, before any reply (optimistic data),
  // are the start of its first message: sniffed and checked like one.
  DoorTarget target{"socks",
                    std::move(*parsed.host),
                    r.port,
                    std::move(what),
                    std::nullopt,
                    std::string(reinterpret_cast<const char*>(in_.data()), have_),
                    "the name the SOCKS request asked for",
                    false,
                    nullptr};
  stream_.expires_never();
  std::make_shared<TargetStep>(impl_, worker_, stream_.release_socket(), std::move(conn_), std::move(exchange_),
                               std::move(target), socks_answer())
      ->start();
}

// A request refused before admission: its row, then the reply `code`, then the close.
void SocksSession::refuse(socks::Reply code, const Refusal& r, std::string error) {
  exchange_.refuse(r, std::move(error));
  out_ = socks::reply(code);
  stream_.expires_after(std::chrono::seconds(30));
  asio::async_write(stream_, asio::buffer(out_),
                    [self = shared_from_this()](boost::system::error_code, std::size_t) { self->close(); });
}

void SocksSession::close() {
  boost::system::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.close();
}

}  // namespace netbox::proxy
