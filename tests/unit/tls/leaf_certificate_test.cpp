#include "netbox/tls/leaf_cache.hpp"

#include "support/temp_dir.hpp"
#include "tls_test_support.hpp"

#include <gmock/gmock.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <csignal>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <thread>

namespace netbox::tls {
namespace {

using tls_test::verify_for;

class Leaves : public ::testing::Test {
 protected:
  test::TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::create(tmp.path() / "ca");
  CertificateAuthority other = CertificateAuthority::create(tmp.path() / "other");
};

TEST_F(Leaves, ALeafIsValidForItsHostAloneChainsToTheCaAndLastsAWeek) {
  LeafMinter minter(ca);
  Leaf leaf = minter.mint("api.example.test");
  EXPECT_EQ(verify_for(leaf.cert.get(), ca.certificate(), "api.example.test"), X509_V_OK);
  EXPECT_EQ(verify_for(leaf.cert.get(), ca.certificate(), "evil.example.test"), X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(verify_for(leaf.cert.get(), ca.certificate(), "example.test"), X509_V_ERR_HOSTNAME_MISMATCH);
  // Only the netbox CA vouches for it.
  EXPECT_NE(verify_for(leaf.cert.get(), other.certificate(), "api.example.test"), X509_V_OK);
  // Not a CA: an agent holding one cannot mint certificates of its own from it.
  EXPECT_EQ(X509_check_ca(leaf.cert.get()), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(leaf.cert.get()) & XKU_SSL_SERVER);
  EXPECT_FALSE(X509_get_extended_key_usage(leaf.cert.get()) & XKU_SSL_CLIENT);
  int days = 0, secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(leaf.cert.get())), 1);
  EXPECT_GT(days * 86400 + secs, 7 * 86400 - 60);
  EXPECT_LE(days * 86400 + secs, 7 * 86400);
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notBefore(leaf.cert.get())), 1);
  EXPECT_LT(days * 86400 + secs, -3500) << "valid from an hour ago, for agents whose clock is behind";
  EXPECT_EQ(X509_check_private_key(leaf.cert.get(), leaf.key.get()), 1);
}

TEST_F(Leaves, AnIpLiteralIsCertifiedAsAnAddressNotAName) {
  LeafMinter minter(ca);
  Leaf v4 = minter.mint("127.0.0.1");
  EXPECT_EQ(verify_for(v4.cert.get(), ca.certificate(), "127.0.0.1"), X509_V_OK);
  EXPECT_EQ(verify_for(v4.cert.get(), ca.certificate(), "127.0.0.2"), X509_V_ERR_IP_ADDRESS_MISMATCH);
  Leaf v6 = minter.mint("::1");
  EXPECT_EQ(verify_for(v6.cert.get(), ca.certificate(), "::1"), X509_V_OK);
}

TEST_F(Leaves, TextThatIsNoHostNameNeverShapesACertificate) {
  LeafMinter minter(ca);
  // A comma would add a second name in OpenSSL's config syntax; a NUL once fooled
  // clients that compared C strings; the rest is no host a policy could name.
  for (std::string bad : {std::string("a.test,DNS:evil.test"), std::string("a.test\0.evil.test", 17),
                          std::string(""), std::string(254, 'a'), std::string("UPPER.test"),
                          std::string("*.test"), std::string("a test"), std::string(".a.test")}) {
    EXPECT_THROW(minter.mint(bad), CaError) << bad;
  }
}

TEST_F(Leaves, ALongNameGetsNoCommonNameButStillItsSubjectAltName) {
  LeafMinter minter(ca);
  const std::string host = std::string(60, 'a') + ".example.test";  // over the CN's 64 bytes
  Leaf leaf = minter.mint(host);
  EXPECT_EQ(verify_for(leaf.cert.get(), ca.certificate(), host), X509_V_OK);
}

// What a real client does: a TLS handshake against a server presenting the leaf, over a
// socket pair, with OpenSSL's verification of the chain and the name.
bool handshake(const Leaf& leaf, X509* trusted, const char* expected_host) {
  // A side that gives up closes its end while the other still writes an alert.
  ::signal(SIGPIPE, SIG_IGN);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
  SSL_CTX* sctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(sctx, leaf.cert.get());
  SSL_CTX_use_PrivateKey(sctx, leaf.key.get());
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(cctx, TLS1_2_VERSION);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), trusted);
  SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, nullptr);
  SSL* server = SSL_new(sctx);
  SSL_set_fd(server, sv[0]);
  SSL* client = SSL_new(cctx);
  SSL_set_fd(client, sv[1]);
  // SSL_set_tlsext_host_name, without the macro's C cast.
  SSL_ctrl(client, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(expected_host));
  SSL_set1_host(client, expected_host);
  std::thread accept([&] {
    SSL_accept(server);
    ::shutdown(sv[0], SHUT_RDWR);
  });
  bool ok = SSL_connect(client) == 1 && SSL_get_verify_result(client) == X509_V_OK;
  ::shutdown(sv[1], SHUT_RDWR);
  accept.join();
  SSL_free(client);
  SSL_free(server);
  SSL_CTX_free(cctx);
  SSL_CTX_free(sctx);
  ::close(sv[0]);
  ::close(sv[1]);
  return ok;
}

TEST_F(Leaves, AClientTrustingTheCaCompletesAHandshakeAndOneTrustingAnotherDoesNot) {
  LeafMinter minter(ca);
  Leaf leaf = minter.mint("api.example.test");
  EXPECT_TRUE(handshake(leaf, ca.certificate(), "api.example.test"));
  EXPECT_FALSE(handshake(leaf, ca.certificate(), "other.example.test"));
  EXPECT_FALSE(handshake(leaf, other.certificate(), "api.example.test"));
}

TEST_F(Leaves, TheCacheMintsOncePerHostAndEvictsTheLeastRecentlyUsed) {
  LeafCache cache(ca, 2);
  auto a1 = cache.get("a.test");
  auto a2 = cache.get("a.test");
  EXPECT_EQ(a1.get(), a2.get());
  EXPECT_EQ(cache.minted(), 1u);
  cache.get("b.test");
  cache.get("a.test");  // a is now the most recently used
  cache.get("c.test");  // so b goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.minted(), 3u);
  EXPECT_EQ(cache.get("a.test").get(), a1.get());
  EXPECT_EQ(cache.minted(), 3u);
  cache.get("b.test");
  EXPECT_EQ(cache.minted(), 4u);
  // An evicted leaf stays valid for whoever still holds it.
  EXPECT_EQ(verify_for(a1->cert.get(), ca.certificate(), "a.test"), X509_V_OK);
}

TEST_F(Leaves, ThreadsSharingTheCacheEachGetAValidLeafForTheirHost) {
  LeafCache cache(ca, 16);
  std::vector<std::thread> threads;
  std::vector<std::vector<std::shared_ptr<const Leaf>>> got(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) got[static_cast<std::size_t>(t)].push_back(cache.get("h" + std::to_string(i % 40) + ".test"));
    });
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.size(), 16u);
  for (auto& per_thread : got)
    for (std::size_t i = 0; i < per_thread.size(); i += 37)
      EXPECT_EQ(verify_for(per_thread[i]->cert.get(), ca.certificate(), "h" + std::to_string(i % 40) + ".test"),
                X509_V_OK);
}

}  // namespace
}  // namespace netbox::tls
