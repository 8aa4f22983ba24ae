#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"
#include "netbox/tls/leaf_certificate.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <nlohmann/json.hpp>

#include "support/websocket_echo.hpp"

#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <fstream>
#include <mutex>
#include <vector>

namespace netbox::test {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct TlsUpstreamServer::State {
  asio::io_context ioc;
  ssl::context ctx{ssl::context::tls_server};
  tcp::acceptor acceptor{ioc};
  std::mutex mu;
  std::vector<int> fds;  // of the connections being served, to wake them at the end
  std::vector<std::thread> threads;
};

TlsUpstreamServer::TlsUpstreamServer(const std::string& cert_name, bool expired, bool keep_alive)
    : state_(std::make_unique<State>()), keep_alive_(keep_alive) {
  auto ca = tls::CertificateAuthority::create(dir_.path() / "upstream-ca");
  ca_pem_ = dir_.path() / "upstream-ca.pem";
  std::ofstream(ca_pem_) << ca.certificate_pem();
  tls::LeafMinter minter(ca);
  const auto leaf = minter.mint(cert_name);
  if (expired) {
    X509_gmtime_adj(X509_getm_notBefore(leaf.cert.get()), -3 * 86400);
    X509_gmtime_adj(X509_getm_notAfter(leaf.cert.get()), -86400);
    X509_sign(leaf.cert.get(), ca.key(), EVP_sha256());
  }
  SSL_CTX_use_certificate(state_->ctx.native_handle(), leaf.cert.get());
  SSL_CTX_use_PrivateKey(state_->ctx.native_handle(), leaf.key.get());
  auto& acc = state_->acceptor;
  acc.open(tcp::v4());
  acc.set_option(asio::socket_base::reuse_address(true));
  acc.bind({asio::ip::make_address_v4("127.0.0.1"), 0});
  acc.listen();
  port_ = acc.local_endpoint().port();
  thread_ = std::thread([this] { serve(); });
}

TlsUpstreamServer::~TlsUpstreamServer() {
  stopping_ = true;
  ::shutdown(state_->acceptor.native_handle(), SHUT_RDWR);  // wakes the blocked accept
  thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(state_->mu);
    for (int fd : state_->fds) ::shutdown(fd, SHUT_RDWR);
    threads.swap(state_->threads);
  }
  for (auto& t : threads) t.join();
}

std::string TlsUpstreamServer::last_echo() const {
  std::lock_guard lock(echo_mu_);
  return last_echo_;
}

void TlsUpstreamServer::serve() {
  while (!stopping_) {
    boost::system::error_code ec;
    tcp::socket sock(state_->ioc);
    state_->acceptor.accept(sock, ec);
    if (ec || stopping_) return;
    const auto id = accepts_.fetch_add(1) + 1;
    const int fd = sock.release();
    if (!keep_alive_) {
      handle(fd, id);
      continue;
    }
    std::lock_guard lock(state_->mu);
    state_->fds.push_back(fd);
    state_->threads.emplace_back([this, fd, id] { handle(fd, id); });
  }
}

void TlsUpstreamServer::handle(int fd, std::uint64_t id) {
  open_.fetch_add(1);
  boost::system::error_code ec;
  tcp::socket sock(state_->ioc, tcp::v4(), fd);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ssl::stream<tcp::socket> stream(std::move(sock), state_->ctx);
  stream.handshake(ssl::stream_base::server, ec);
  if (!ec) handshakes_.fetch_add(1);
  boost::beast::flat_buffer buf;
  bool abrupt = false;
  while (!ec && !stopping_) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(boost::none);  // uploads larger than Beast's default 8 MiB
    http::read(stream, buf, parser, ec);
    if (ec) break;
    auto req = parser.release();
    requests_.fetch_add(1);
    nlohmann::json j;
    j["method"] = std::string(req.method_string());
    j["target"] = std::string(req.target());
    j["host"] = std::string(req[http::field::host]);
    j["body"] = req.body();
    j["connection"] = id;
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& f : req) headers[std::string(f.name_string())] = std::string(f.value());
    j["headers"] = headers;
    const std::string body = j.dump();
    {
      std::lock_guard lock(echo_mu_);
      last_echo_ = body;
    }
    // Any request with `Upgrade: websocket` makes the connection a WebSocket echo.
    if (boost::beast::websocket::is_upgrade(req)) {
      websocket_echo(stream, req);
      abrupt = true;  // the echo ended the TLS session (or the client did)
      break;
    }
    if (script_) {
      script_(body, [&stream](std::string_view bytes) {
        boost::system::error_code wec;
        asio::write(stream, asio::buffer(bytes.data(), bytes.size()), wec);
        return !wec;
      });
      break;
    }
    const std::string target(req.target());
    const bool keep = keep_alive_ && req.keep_alive();
    std::string out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
    if (target == "/cut") {
      out += "Content-Length: 100000\r\n\r\n" + body;
      asio::write(stream, asio::buffer(out), ec);
      abrupt = true;  // closed mid-answer
      break;
    }
    out += "Content-Length: " + std::to_string(body.size()) + (keep ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n") + body;
    if (target == "/extra") out += "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\npoisoned";
    asio::write(stream, asio::buffer(out), ec);
    if (target == "/then-close") abrupt = true;
    if (!keep || abrupt) break;
  }
  // An abrupt end is a TCP close without close_notify, seen by the client at once.
  if (!abrupt) stream.shutdown(ec);
  {
    // Out of the list before the descriptor closes: its number may be reused at once.
    std::lock_guard lock(state_->mu);
    std::erase(state_->fds, fd);
  }
  ::shutdown(fd, SHUT_RDWR);
  stream.next_layer().close(ec);
  open_.fetch_sub(1);
}

}  // namespace netbox::test
