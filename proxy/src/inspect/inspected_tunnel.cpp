#include "inspect/inspected_tunnel.hpp"

#include "http/http_session.hpp"
#include "pipeline/policy_answer.hpp"
#include "pipeline/target.hpp"

#include "netbox/tls/client_hello.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include <openssl/ssl.h>

#include <algorithm>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

InspectedTunnel::InspectedTunnel(DoorServices& impl, Worker& worker, tcp::socket client, std::string preface,
                                 std::string early, Exchange tunnel, InspectionScope scope)
    : impl_(impl),
      worker_(worker),
      client_(std::move(client)),
      preface_(std::move(preface)),
      hello_(std::move(early)),
      tunnel_(std::move(tunnel)),
      scope_(std::move(scope)),
      timer_(worker.ioc) {
  impl_.counters.active_tunnels.fetch_add(1);
}

InspectedTunnel::~InspectedTunnel() { impl_.counters.active_tunnels.fetch_sub(1); }

// The front part has header_timeout for the ClientHello and the handshake, however they
// trickle (30 s for the preface); then the request loop's own timeouts apply.
void InspectedTunnel::start() {
  if (preface_.empty()) return on_established({});
  timer_.expires_after(std::chrono::seconds(30));
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec) self->close("answering the agent's connection request timed out");
  });
  asio::async_write(client_, asio::buffer(preface_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_established(ec); });
}

void InspectedTunnel::on_established(boost::system::error_code ec) {
  if (ec) return close("answering the agent's connection request failed: " + ec.message());
  timer_.expires_after(scope_.profile->limits.header_timeout);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code e) {
    if (auto self = weak.lock(); self && !e) self->close("the TLS ClientHello and handshake took longer than limits.header_timeout_ms");
  });
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
      return refuse_tunnel(policy::Decision::refused(
          "inspect", "netbox inspects " + where +
                         ": only TLS carrying HTTP/1.1 goes through this tunnel, and what the agent sent is not TLS"));
    case tls::ClientHello::Status::malformed:
    case tls::ClientHello::Status::complete:
      break;
  }
  // The name the agent's TLS asks for must be the one the policy decided on; another
  // would reach a different service behind the same front (domain fronting).
  const auto name = policy::check_server_name(scope_.host, scope_.name_from_address, asked, policy::TlsEnd::netbox,
                                              "the host this connection was admitted for");
  if (!name.lets_through()) return refuse_tunnel(name);
  start_handshake();
}

void InspectedTunnel::start_handshake() {
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

void InspectedTunnel::refuse_tunnel(const policy::Decision& no) {
  auto refusal = refusal_of(no, 403);
  refusal.what = "CONNECT " + authority(scope_.host.name, scope_.port);
  tunnel_.overrule(refusal.outcome, no.rule, no.reason);
  auto res = std::make_shared<boost::beast::http::response<boost::beast::http::string_body>>(
      make_refusal(refusal, 11, false));
  tunnel_status_ = 403;
  http::async_write(client_, *res, [self = shared_from_this(), res, reason = no.reason](beast::error_code, std::size_t) {
    self->close(reason);
  });
}

// From here on the connection is the request loop's, as any plain HTTP one.
void InspectedTunnel::on_handshake(boost::system::error_code ec) {
  impl_.counters.count_tls(ec ? Counters::AgentTls::failed : Counters::AgentTls::ok);
  if (ec) return close("the TLS handshake with the agent failed: " + ec.message());
  closed_ = true;
  timer_.cancel();
  FixedDestination fixed{"http", std::move(scope_), std::move(tunnel_), {}, std::nullopt};
  std::make_shared<InspectedSession>(impl_, worker_, std::move(*tls_), std::move(fixed))->start();
  tls_.reset();
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
  tunnel_.finish(tunnel_status_, std::move(error));
}

}  // namespace netbox::proxy
