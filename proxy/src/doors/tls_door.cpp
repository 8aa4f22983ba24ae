#include "doors/tls_door.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "base/door_services.hpp"
#include "http/http_session.hpp"
#include "http/upgraded_relay.hpp"
#include "inspect/agent_tls_stream.hpp"
#include "inspect/inspector.hpp"
#include "pipeline/agent_connection.hpp"

#include <boost/beast/core/stream_traits.hpp>

#include <sys/socket.h>

#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace netbox::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// Every certificate completes the handshake; its verdict (untrusted, expired, unmapped) is
// the loop's 407 with a row, which says why, rather than an alert the client reports as a
// bare handshake failure and the audit never sees.
int let_through(int, X509_STORE_CTX*) { return 1; }

void load(ssl::context& ctx, const ListenerTlsFiles& f) {
  boost::system::error_code ec;
  // The key first: a certificate loaded after it that does not match it drops it, which the
  // check below names (the other order fails the key's load with OpenSSL's words only).
  ctx.use_private_key_file(f.key.string(), ssl::context::pem, ec);
  if (ec) throw std::runtime_error("--listen-key " + f.key.string() + ": not a readable PEM private key (" + ec.message() + ")");
  ctx.use_certificate_chain_file(f.cert.string(), ec);
  if (ec) throw std::runtime_error("--listen-cert " + f.cert.string() + ": not a readable PEM certificate chain (" + ec.message() + ")");
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    throw std::runtime_error("--listen-key " + f.key.string() + ": not the key of --listen-cert " + f.cert.string());
  if (!f.client_ca) return;
  ctx.load_verify_file(f.client_ca->string(), ec);
  STACK_OF(X509_NAME)* names = ec ? nullptr : SSL_load_client_CA_file(f.client_ca->c_str());
  if (ec || names == nullptr)
    throw std::runtime_error("--client-ca " + f.client_ca->string() + ": not a readable PEM certificate file" +
                             (ec ? " (" + ec.message() + ")" : std::string()));
  SSL_CTX_set_client_CA_list(ctx.native_handle(), names);
  SSL_CTX_set_verify(ctx.native_handle(), SSL_VERIFY_PEER, let_through);
  // A resumed session keeps the certificate and verdict of its first handshake.
  static constexpr unsigned char kContext[] = "netbox-proxy-listener";
  SSL_CTX_set_session_id_context(ctx.native_handle(), kContext, sizeof kContext - 1);
}

// One connection on a TLS listener, from its handshake to the end of the relay between
// its TLS stream and the request loop's end of the socket pair.
class TlsDoor : public std::enable_shared_from_this<TlsDoor> {
 public:
  TlsDoor(DoorServices& rt, Worker& w, tcp::socket s, ClientSlot slot)
      : rt_(rt),
        worker_(w),
        slot_(std::move(slot)),
        tls_(std::move(s), rt.listener_tls->context(), {}),
        relay_(tls_, [](std::string) {}) {}

  void start() {
    beast::get_lowest_layer(tls_).expires_after(ListenerTls::kHandshakeTimeout);
    tls_.async_handshake([self = shared_from_this()](boost::system::error_code ec, std::size_t) {
      self->on_handshake(ec);
    });
  }

 private:
  void on_handshake(boost::system::error_code ec) {
    if (ec) return refuse_handshake(ec);
    beast::get_lowest_layer(tls_).expires_never();
    open_agent_connection(rt_, tls_.lowest_layer(), slot_, DoorKind::http,
                          [self = shared_from_this()](AgentConnection c) { self->bridge(std::move(c)); });
  }

  void refuse_handshake(boost::system::error_code ec) {
    boost::system::error_code peer_ec;
    const auto peer = tls_.lowest_layer().remote_endpoint(peer_ec);
    if (rt_.tls_handshake_log.note())
      rt_.log.write("tls_handshake_failed", {{"client", peer_ec ? std::string() : endpoint_text(peer)},
                                             {"error", ec == beast::error::timeout ? "no handshake within 10 s" : ec.message()},
                                             {"count", rt_.tls_handshake_log.take()}});
    tls_.lowest_layer().close(peer_ec);
  }

  // The connection is opened: who its certificate says it is, then the loop over the pair.
  void bridge(AgentConnection c) {
    std::optional<policy::Decision> refused;
    if (auto* certs = rt_.listener_tls->certs(); certs && c.who.is_anonymous()) {
      auto v = certs->identify(peer_certificate(tls_.native_handle()), *c.policy);
      if (!v.who) refused = policy::Decision::refused("client_cert", std::move(v.why));
      else if (!v.who->is_anonymous()) {
        c.become(std::move(*v.who), rt_);
        c.cert = std::move(v.held);
      }
    }
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
      rt_.log.write(LogLevel::warn, "tls_bridge_failed", {{"client", c.peer_text}, {"error", std::strerror(errno)}});
      boost::system::error_code ignored;
      return tls_.lowest_layer().close(ignored);
    }
    // Plain stream descriptors under asio's TCP socket type, which the loop takes: only
    // read, written, shut down and closed there. The loop never asks them for addresses:
    // a bridged connection's peer is this one's (SessionLink::bridged).
    boost::system::error_code ec;
    tcp::socket inner(worker_.ioc), outer(worker_.ioc);
    inner.assign(c.peer.protocol(), fds[1], ec);
    if (!ec) outer.assign(c.peer.protocol(), fds[0], ec);
    if (ec) {
      if (!inner.is_open()) ::close(fds[1]);
      ::close(fds[0]);
      return tls_.lowest_layer().close(ec);
    }
    outer_.emplace(std::move(outer));
    const auto idle = c.profile->limits.idle_timeout;
    std::make_shared<ClientSession>(rt_, worker_, std::move(inner), std::move(c), std::move(refused))->start();
    relay_.start(*outer_, {}, {}, idle, up_, down_, unmetered_, shared_from_this());
  }

  DoorServices& rt_;
  Worker& worker_;
  ClientSlot slot_;
  AgentTlsStream tls_;
  std::optional<beast::tcp_stream> outer_;
  // The bridge's bytes are the request loop's, which charges the agent's budgets: this
  // relay charges nothing (a default ByteMeter), or every byte would count twice.
  ByteMeter unmetered_;
  UpgradedRelay<AgentTlsStream, beast::tcp_stream> relay_;
  std::uint64_t up_ = 0, down_ = 0;  // counted by the loop's rows, not here
};

// A fatal internal_error alert (RFC 8446 6.2; RFC 5246 7.2), in the clear as every alert
// before a handshake is: the refusal is about the proxy's state, not the client's hello.
constexpr unsigned char kInternalErrorAlert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 80};

class TlsRefusal : public std::enable_shared_from_this<TlsRefusal> {
 public:
  explicit TlsRefusal(tcp::socket s) : s_(std::move(s)) {}
  void start() {
    // Seven bytes into a fresh socket's empty send buffer: never blocks, never partial.
    [[maybe_unused]] const auto sent = ::send(s_.socket().native_handle(), kInternalErrorAlert,
                                              sizeof kInternalErrorAlert, MSG_DONTWAIT | MSG_NOSIGNAL);
    boost::system::error_code ec;
    s_.socket().shutdown(tcp::socket::shutdown_send, ec);
    s_.expires_after(kRefusalDrain);
    drain();
  }

 private:
  void drain() {
    s_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
      if (!ec) self->drain();  // closed (destroyed) on EOF, an error or the deadline
    });
  }
  beast::tcp_stream s_;
  char buf_[4096];
};

}  // namespace

void refuse_tls_connection(tcp::socket s) {
  std::make_shared<TlsRefusal>(std::move(s))->start();
}

ListenerTls::ListenerTls(const ListenerTlsFiles& files, bool allow_anonymous,
                         std::function<void(bool, const std::string&)> on_reload)
    : ctx_(ssl::context::tls_server) {
  agent_side_tls(ctx_);
  load(ctx_, files);
  if (files.client_certs) certs_ = std::make_unique<ClientCerts>(*files.client_certs, allow_anonymous, std::move(on_reload));
}

void take_tls_connection(DoorServices& rt, Worker& w, tcp::socket s, ClientSlot slot) {
  std::make_shared<TlsDoor>(rt, w, std::move(s), std::move(slot))->start();
}

}  // namespace netbox::proxy
