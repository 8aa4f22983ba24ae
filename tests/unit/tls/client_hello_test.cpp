#include "netbox/tls/client_hello.hpp"

#include <gmock/gmock.h>
#include <openssl/ssl.h>

#include <string>
#include <vector>

namespace netbox::tls {
namespace {

using Bytes = std::vector<std::uint8_t>;
using Status = ClientHello::Status;
using ::testing::ElementsAre;

// The first flight of a real OpenSSL client (what curl, Python and Node send is built the
// same way), captured from a memory BIO.
Bytes openssl_hello(const char* sni, const std::vector<std::string>& alpn = {}) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (sni) SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(sni));
  if (!alpn.empty()) {
    Bytes wire;
    for (const auto& p : alpn) {
      wire.push_back(static_cast<std::uint8_t>(p.size()));
      wire.insert(wire.end(), p.begin(), p.end());
    }
    SSL_set_alpn_protos(ssl, wire.data(), static_cast<unsigned>(wire.size()));
  }
  SSL_connect(ssl);  // wants to read the server's reply: the hello is in `out`
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  Bytes hello(data, data + n);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

void put16(Bytes& b, std::size_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}

struct Extension {
  std::uint16_t type;
  Bytes data;
};

Extension sni_extension(const std::string& name) {
  Bytes d;
  put16(d, name.size() + 3);
  d.push_back(0);
  put16(d, name.size());
  d.insert(d.end(), name.begin(), name.end());
  return {0, d};
}

// A ClientHello built by hand, for what no real client sends; split into records of at
// most `record` bytes.
Bytes hand_hello(const std::vector<Extension>& exts, std::size_t record = 16384) {
  Bytes body;
  put16(body, 0x0303);
  body.insert(body.end(), 32, 0xab);  // random
  body.push_back(0);                  // session id
  put16(body, 2);
  put16(body, 0x1301);                // TLS_AES_128_GCM_SHA256
  body.push_back(1);
  body.push_back(0);                  // null compression
  Bytes ext_bytes;
  for (const auto& e : exts) {
    put16(ext_bytes, e.type);
    put16(ext_bytes, e.data.size());
    ext_bytes.insert(ext_bytes.end(), e.data.begin(), e.data.end());
  }
  put16(body, ext_bytes.size());
  body.insert(body.end(), ext_bytes.begin(), ext_bytes.end());
  Bytes msg{1, static_cast<std::uint8_t>(body.size() >> 16), static_cast<std::uint8_t>(body.size() >> 8),
            static_cast<std::uint8_t>(body.size())};
  msg.insert(msg.end(), body.begin(), body.end());
  Bytes out;
  for (std::size_t at = 0; at < msg.size(); at += record) {
    std::size_t n = std::min(record, msg.size() - at);
    out.push_back(22);
    put16(out, 0x0301);
    put16(out, n);
    out.insert(out.end(), msg.begin() + static_cast<long>(at), msg.begin() + static_cast<long>(at + n));
  }
  return out;
}

TEST(ClientHello, ARealClientsHelloGivesItsServerNameLowerCasedAndItsAlpn) {
  Bytes hello = openssl_hello("API.Example.test", {"h2", "http/1.1"});
  ClientHello h = read_client_hello(hello);
  ASSERT_EQ(h.status, Status::complete) << h.reason;
  EXPECT_EQ(h.server_name, "api.example.test");
  EXPECT_THAT(h.alpn, ElementsAre("h2", "http/1.1"));
  EXPECT_FALSE(h.encrypted_client_hello);
  EXPECT_EQ(h.bytes, hello.size());
  // Whatever the agent sends after its hello is not part of it.
  Bytes more = hello;
  more.insert(more.end(), {23, 3, 3, 0, 1, 0});
  EXPECT_EQ(read_client_hello(more).bytes, hello.size());
}

TEST(ClientHello, EveryPrefixAsksForMoreAndNeverGuesses) {
  Bytes hello = openssl_hello("a.test");
  for (std::size_t n = 0; n < hello.size(); ++n) {
    ClientHello h = read_client_hello(std::span(hello.data(), n));
    ASSERT_EQ(h.status, Status::need_more) << "prefix of " << n << " bytes: " << h.reason;
    EXPECT_TRUE(h.server_name.empty());
  }
}

TEST(ClientHello, AHelloWithoutSniIsCompleteWithNoName) {
  ClientHello h = read_client_hello(openssl_hello(nullptr));
  ASSERT_EQ(h.status, Status::complete) << h.reason;
  EXPECT_EQ(h.server_name, "");
}

TEST(ClientHello, PlainHttpAndSshAreNotTls) {
  for (std::string s : {"GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "\x16\x02", "\x17\x03\x03\x00\x05"}) {
    Bytes b(s.begin(), s.end());
    EXPECT_EQ(read_client_hello(b).status, Status::not_tls) << s;
  }
}

TEST(ClientHello, AHelloSplitOverRecordsIsReassembled) {
  Bytes b = hand_hello({sni_extension("split.example.test")}, 17);
  ClientHello h = read_client_hello(b);
  ASSERT_EQ(h.status, Status::complete) << h.reason;
  EXPECT_EQ(h.server_name, "split.example.test");
  EXPECT_EQ(h.bytes, b.size());
}

TEST(ClientHello, EchIsNoticedSoTheOuterNameIsNotTakenForTheRealOne) {
  ClientHello h = read_client_hello(hand_hello({sni_extension("public.example.test"), {0xfe0d, Bytes{0, 1, 2}}}));
  ASSERT_EQ(h.status, Status::complete) << h.reason;
  EXPECT_TRUE(h.encrypted_client_hello);
  EXPECT_EQ(h.server_name, "public.example.test");
}

TEST(ClientHello, AmbiguousOrHostileHellosAreMalformedNotGuessed) {
  // Two SNI extensions: a server could read the other one.
  EXPECT_EQ(read_client_hello(hand_hello({sni_extension("a.test"), sni_extension("b.test")})).status,
            Status::malformed);
  // Two host names in one SNI list.
  Extension two = sni_extension("a.test");
  Extension second = sni_extension("b.test");
  two.data.insert(two.data.end(), second.data.begin() + 2, second.data.end());
  two.data[0] = 0;
  two.data[1] = static_cast<std::uint8_t>(two.data.size() - 2);
  EXPECT_EQ(read_client_hello(hand_hello({two})).status, Status::malformed);
  // Bytes no host name has: a NUL, a space, two final dots, non-ASCII.
  for (std::string bad : {std::string("a.test\0evil", 11), std::string("a test"), std::string("a.test.."),
                          std::string("."), std::string("caf\xc3\xa9.test")}) {
    ClientHello h = read_client_hello(hand_hello({sni_extension(bad)}));
    EXPECT_EQ(h.status, Status::malformed) << bad;
    EXPECT_TRUE(h.server_name.empty() || h.status == Status::malformed);
  }
  // An extension length past the end.
  Bytes cut = hand_hello({sni_extension("a.test")});
  cut[cut.size() - 9] = 0xff;
  EXPECT_EQ(read_client_hello(cut).status, Status::malformed);
  // A record of another type in the middle of the hello.
  Bytes mixed = hand_hello({sni_extension("mixed.example.test")}, 20);
  mixed[25] = 23;
  EXPECT_EQ(read_client_hello(mixed).status, Status::malformed);
}

// One final dot names the same host (issue 22, item 6: "evil." was malformed, and a
// malformed hello was let through): it is dropped, so the name is compared.
TEST(ClientHello, AFinalDotIsNormalisedAway) {
  ClientHello h = read_client_hello(hand_hello({sni_extension("Evil.Test.")}));
  EXPECT_EQ(h.status, Status::complete);
  EXPECT_EQ(h.server_name, "evil.test");
}

TEST(ClientHello, AnAnnouncedGiantIsRefusedAtOnceNotAwaited) {
  // A handshake header announcing 1 MiB: refused from the first record, so a peer cannot
  // make the proxy wait for (or buffer) a hello that will never fit.
  Bytes b{22, 3, 1, 0, 4, 1, 0x10, 0, 0};
  ClientHello h = read_client_hello(b);
  EXPECT_EQ(h.status, Status::malformed);
  EXPECT_THAT(h.reason, ::testing::HasSubstr("longer than"));
  Bytes record_too_long{22, 3, 1, 0xff, 0xff};
  EXPECT_EQ(read_client_hello(record_too_long).status, Status::malformed);
}

}  // namespace
}  // namespace netbox::tls
