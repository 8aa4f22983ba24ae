#pragma once
// What TLS inspection needs for the life of the proxy (issue 16): the netbox CA (loaded
// once at start, with all its file checks), the cache of leaf certificates minted from
// it, the server-side TLS context agents handshake with (TLS 1.2+, ALPN http/1.1 only:
// an agent offering h2 alone gets no ALPN and falls back), and the client-side context
// for upstreams (the system trust store plus --upstream-ca, peer verification on, TLS
// 1.2+, ALPN http/1.1). Shared by the io threads: the contexts are only read after
// construction, the cache locks itself.
#include "netbox/tls/certificate_authority.hpp"
#include "netbox/tls/leaf_cache.hpp"

#include <boost/asio/ssl/context.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

// The server side agents handshake with, on an inspected connection and on the proxy's TLS
// listener alike (tls_door.hpp): TLS 1.2+, AEAD suites in netbox's order, no
// renegotiation, ALPN http/1.1 only, record buffers released while idle.
void agent_side_tls(boost::asio::ssl::context& ctx);

class Inspector {
 public:
  static constexpr std::size_t kLeafCacheSize = 1024;

  // Throws tls::CaError (the CA does not load) or std::runtime_error (--upstream-ca).
  Inspector(const std::filesystem::path& ca_dir, const std::optional<std::filesystem::path>& upstream_ca);
  Inspector(const Inspector&) = delete;
  Inspector& operator=(const Inspector&) = delete;

  boost::asio::ssl::context& agent_context() { return agent_; }
  boost::asio::ssl::context& upstream_context() { return upstream_; }
  // The leaf for `host` (minted on first use, CPU only, tens of microseconds).
  std::shared_ptr<const tls::Leaf> leaf(const std::string& host) { return leaves_.get(host); }
  std::size_t leaves_minted() const { return leaves_.minted(); }
  std::string ca_certificate_pem() const { return ca_.certificate_pem(); }

 private:
  tls::CertificateAuthority ca_;
  tls::LeafCache leaves_;
  boost::asio::ssl::context agent_;
  boost::asio::ssl::context upstream_;
};

}  // namespace netbox::proxy
