#include "inspect/inspector.hpp"

#include <openssl/ssl.h>

#include <cstring>
#include <stdexcept>

namespace netbox::proxy {
namespace {

namespace ssl = boost::asio::ssl;

constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// ALPN on the agent side: http/1.1 when offered, otherwise none (the agent then speaks
// HTTP/1.1 by default; HTTP/2 is never chosen, so netbox always reads HTTP/1.1).
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen,
                  void*) {
  for (unsigned i = 0; i < inlen;) {
    const unsigned len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

constexpr const char* kAgentTls12Suites =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305";

void tls12_or_later(ssl::context& ctx) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  // No TLS 1.2 renegotiation either way: each costs the proxy a key exchange (an agent could
  // ask for them in a loop), and no HTTP/1.1 exchange netbox carries needs one. OpenSSL 3
  // already refuses a client's by default; this says so whatever the library's default.
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
  // An idle connection (an agent's between requests, a pooled upstream one) then holds no
  // record buffers (about 34 KiB each): memory per idle inspected connection (docs/bench.md).
  SSL_CTX_set_mode(ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS);
}

tls::CertificateAuthority load_ca(const std::filesystem::path& dir) {
  try {
    return tls::CertificateAuthority::load(dir);
  } catch (const tls::CaError& e) {
    throw tls::CaError("--ca-dir " + dir.string() + ": " + e.what());
  }
}

}  // namespace

void agent_side_tls(ssl::context& ctx) {
  tls12_or_later(ctx);
  // The agent's side offers AEAD suites only, in netbox's order: no CBC (its padding and
  // MAC-then-encrypt have given one attack after another), AES-GCM first (hardware on
  // every host netbox runs on), then ChaCha20-Poly1305. TLS 1.3's suites are all AEAD.
  // The leaf keys are ECDSA (tls/leaf_certificate.hpp); the RSA names cost nothing.
  if (SSL_CTX_set_cipher_list(ctx.native_handle(), kAgentTls12Suites) != 1)
    throw std::runtime_error("OpenSSL refused netbox's TLS 1.2 cipher list");
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_alpn_select_cb(ctx.native_handle(), select_http11, nullptr);
}

Inspector::Inspector(const std::filesystem::path& ca_dir, const std::optional<std::filesystem::path>& upstream_ca)
    : ca_(load_ca(ca_dir)),
      leaves_(ca_, kLeafCacheSize),
      agent_(ssl::context::tls_server),
      upstream_(ssl::context::tls_client) {
  agent_side_tls(agent_);

  tls12_or_later(upstream_);
  boost::system::error_code ec;
  upstream_.set_default_verify_paths(ec);
  if (ec) throw std::runtime_error("the system trust store could not be loaded: " + ec.message());
  if (upstream_ca) {
    upstream_.load_verify_file(upstream_ca->string(), ec);
    if (ec)
      throw std::runtime_error("--upstream-ca " + upstream_ca->string() +
                               ": not a readable PEM certificate file (" + ec.message() + ")");
  }
  upstream_.set_verify_mode(ssl::verify_peer);
  SSL_CTX_set_alpn_protos(upstream_.native_handle(), kHttp11, sizeof kHttp11);
}

}  // namespace netbox::proxy
