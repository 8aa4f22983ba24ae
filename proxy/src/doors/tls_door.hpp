#pragma once
// The proxy's listener over TLS (an "HTTPS proxy", issue 26 item 5): `netbox proxy
// --listen-cert FILE --listen-key FILE` serves its `--listen` listeners inside TLS, and with
// `--client-ca CA --client-certs BOOK` asks each client for a certificate, which names
// the agent (client_certs.hpp). What runs inside is the HTTP listener's own request loop
// (ClientSession: forward, CONNECT with its tunnel and fronting check, inspection, client
// tokens): the door ends TLS and bridges the plaintext to that loop over a local socket
// pair, with one relay (UpgradedRelay, the WebSocket relay) between the two. So nothing
// of the loop is written twice; the price is one copy of each byte more than the plain door.
//
// A connection: its client slot (the connection caps, by its address) → the handshake
// (bounded by kHandshakeTimeout; a client that does not complete one is closed and
// logged, `tls_handshake_failed`) → the connection opened as every door's is (audit
// room, identity, policy) → its certificate's verdict (a registered address keeps its
// agent) → the loop, bound to it. A refused certificate is answered by the loop: 407 to
// its first request, with a row (rule `client_cert`), then the connection is closed.
// A connection over the caps gets no handshake: a TLS alert (refuse_tls_connection).
#include "netbox/proxy/proxy_options.hpp"

#include "pipeline/client_certs.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace netbox::proxy {

struct DoorServices;
struct Worker;
class ClientSlot;

// For the life of the proxy: the listener's TLS context (agent_side_tls, its certificate
// and key, and the client CA it asks for), and the certificate book.
class ListenerTls {
 public:
  static constexpr std::chrono::seconds kHandshakeTimeout{10};

  // Throws std::runtime_error naming the flag and file at fault (the proxy does not start),
  // or tokens::TokenBookError for the book.
  ListenerTls(const ListenerTlsFiles& files, bool allow_anonymous,
              std::function<void(bool ok, const std::string& text)> on_reload);
  SSL_CTX* context() { return ctx_.native_handle(); }
  ClientCerts* certs() { return certs_.get(); }  // null: no client certificates asked for

 private:
  boost::asio::ssl::context ctx_;
  std::unique_ptr<ClientCerts> certs_;
};

// Takes a connection accepted on a TLS listener, with its client slot.
void take_tls_connection(DoorServices& rt, Worker& w, boost::asio::ip::tcp::socket s, ClientSlot slot);

// A connection on a TLS listener that the connection caps refused (take_client_slot has
// counted and logged it): answered with a fatal TLS alert (internal_error), the record a
// TLS client reads and reports in place of its ServerHello, then closed once the client
// has closed (at most kRefusalDrain: the client's hello is read and dropped, so the close
// is a FIN the client sees after the alert, not a reset ahead of it). No handshake is made
// for a connection over the caps: it would cost the proxy what the caps protect.
inline constexpr std::chrono::seconds kRefusalDrain{1};
void refuse_tls_connection(boost::asio::ip::tcp::socket s);

}  // namespace netbox::proxy
