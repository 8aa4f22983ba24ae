// Inside an inspected tunnel (issue 22, item 12): a request head another parser could
// read otherwise (two Content-Lengths, Transfer-Encoding in odd case or as a list, on
// HTTP/1.0, obs-fold) is refused with 400 as on the plain door, and nothing reaches the
// upstream; the agent-facing TLS offers AEAD suites only, in netbox's order. A raw
// OpenSSL client after a real CONNECT, a real TLS upstream on loopback.
#include "agent_tls.hpp"
#include "proxy_fixture.hpp"

#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fstream>
#include <memory>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;

class InspectedHeads : public ProxyTest {
 protected:
  InspectedHeads() : tls_upstream("upstream.test") {
    (void)tls::CertificateAuthority::create(dir.path() / "ca");
    configure = [this](proxy::ProxyOptions& o) {
      o.ca_dir = dir.path() / "ca";
      o.upstream_ca = tls_upstream.ca_pem();
    };
  }
  void start() {
    auto j = nlohmann::json::parse(base_policy());
    j["ports"] = {tls_upstream.port()};
    j["inspect"] = {"upstream.test"};
    start_proxy(j.dump());
  }
  std::string authority() const { return "upstream.test:" + std::to_string(tls_upstream.port()); }

  TlsUpstreamServer tls_upstream;
};

TEST_F(InspectedHeads, EachAmbiguousHeadIsRefusedWith400AndNothingGoesUpstream) {
  start();
  const std::string host = "Host: upstream.test\r\n";
  const std::vector<std::pair<std::string, std::string>> heads{
      {"two Content-Lengths", "POST /a HTTP/1.1\r\n" + host + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"},
      {"Content-Length 3, 3", "POST /a HTTP/1.1\r\n" + host + "Content-Length: 3, 3\r\n\r\nabc"},
      {"Chunked", "POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
      {"identity, chunked",
       "POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: identity, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
      {"TE on HTTP/1.0", "POST /a HTTP/1.0\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
      {"obs-fold", "GET /a HTTP/1.1\r\n" + host + "X-Folded: a\r\n b\r\n\r\n"},
      {"folded Transfer-Encoding", "POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding:\r\n chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
  };
  for (const auto& [name, head] : heads) {
    AgentTls agent(port, authority(), nullptr);
    ASSERT_TRUE(agent.connected()) << name;
    const auto answer = agent.exchange(head);
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << name << ": " << answer;
  }
  EXPECT_EQ(tls_upstream.requests(), 0u);
  // A plain request on a new connection still goes through.
  AgentTls agent(port, authority(), nullptr);
  ASSERT_TRUE(agent.connected());
  EXPECT_EQ(agent.exchange("GET /ok HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(InspectedHeads, AnAgentOfferingOnlyCbcSuitesGetsNoHandshake) {
  start();
  AgentTls agent(port, authority(),
                 "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-SHA");
  EXPECT_FALSE(agent.connected());
  EXPECT_EQ(tls_upstream.requests(), 0u);
}

TEST_F(InspectedHeads, TheProxysSuiteOrderWinsOverTheAgents) {
  start();
  AgentTls agent(port, authority(), "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256");
  ASSERT_TRUE(agent.connected());
  EXPECT_EQ(agent.cipher(), "ECDHE-ECDSA-AES128-GCM-SHA256");
}

}  // namespace
}  // namespace netbox::test
