#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"
#include "netbox/tls/leaf_certificate.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <fstream>

namespace netbox::test {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct TlsUpstreamServer::State {
  asio::io_context ioc;
  ssl::context ctx{ssl::context::tls_server};
  tcp::acceptor acceptor{ioc};
};

TlsUpstreamServer::TlsUpstreamServer(const std::string& cert_name, bool expired)
    : state_(std::make_unique<State>()) {
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
    timeval tv{10, 0};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ssl::stream<tcp::socket> stream(std::move(sock), state_->ctx);
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) continue;
    handshakes_.fetch_add(1);
    boost::beast::flat_buffer buf;
    http::request<http::string_body> req;
    http::read(stream, buf, req, ec);
    if (ec) continue;
    requests_.fetch_add(1);
    nlohmann::json j;
    j["method"] = std::string(req.method_string());
    j["target"] = std::string(req.target());
    j["host"] = std::string(req[http::field::host]);
    j["body"] = req.body();
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& f : req) headers[std::string(f.name_string())] = std::string(f.value());
    j["headers"] = headers;
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = j.dump();
    {
      std::lock_guard lock(echo_mu_);
      last_echo_ = res.body();
    }
    res.keep_alive(false);
    res.prepare_payload();
    http::write(stream, res, ec);
    stream.shutdown(ec);
  }
}

}  // namespace netbox::test
