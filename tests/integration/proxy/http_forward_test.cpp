// Plain HTTP through the proxy: forwarding, keep-alive and pooling, header hygiene,
// malformed requests, and upstream failures.
#include "proxy_fixture.hpp"

#include <nlohmann/json.hpp>

namespace netbox::test {
namespace {

using json = nlohmann::json;

TEST_F(ProxyTest, AllowedGetIsForwardedWithKeepAliveAndOneUpstreamConnection) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  for (int i = 0; i < 5; ++i) {
    auto r = c.send("GET " + upstream_url("/echo/" + std::to_string(i) + "?q=1") +
                    " HTTP/1.1\r\nHost: upstream.test\r\nUser-Agent: t\r\n\r\n");
    ASSERT_EQ(r.status, 200) << r.error << r.body;
    auto j = json::parse(r.body);
    EXPECT_EQ(j["method"], "GET");
    EXPECT_EQ(j["target"], "/echo/" + std::to_string(i) + "?q=1");  // origin-form upstream
  }
  EXPECT_EQ(upstream.requests(), 5u);
  EXPECT_EQ(upstream.connections(), 1u) << "the upstream connection should be pooled and reused";

  auto all = rows();
  ASSERT_EQ(all.size(), 5u);
  for (const auto& row : all) {
    EXPECT_EQ(row.decision, "allow");
    EXPECT_EQ(row.kind, "http");
    EXPECT_EQ(row.method, "GET");
    EXPECT_EQ(row.host, "upstream.test");
    EXPECT_EQ(row.port, upstream.port());
    EXPECT_EQ(row.resolved_addr, "127.0.0.1");
    EXPECT_EQ(row.rule, "allow[0] upstream.test");
    EXPECT_EQ(row.status, 200);
    EXPECT_GT(row.bytes_down, 0);
    EXPECT_TRUE(row.duration_ms.has_value());
    EXPECT_EQ(row.agent, "anonymous");
    EXPECT_EQ(row.client_addr.rfind("127.0.0.1:", 0), 0u) << row.client_addr;
  }
  EXPECT_EQ(all[2].path, "/echo/2");  // the query string is not logged
}

TEST_F(ProxyTest, PoolingAlsoWorksAcrossAgentConnections) {
  start_proxy(base_policy(), {}, 1);
  for (int i = 0; i < 4; ++i) {
    ProxyConnection c(port);
    auto r = c.send("GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
    ASSERT_EQ(r.status, 200) << r.error;
  }
  EXPECT_EQ(upstream.connections(), 1u);
}

TEST_F(ProxyTest, HostHeaderIsRewrittenToTheTargetAndHopByHopHeadersAreRemoved) {
  start_proxy(base_policy());
  auto r = proxy_get(port, upstream_url("/h"),
                     "Host: evil.example\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Foo: 1\r\n"
                     "Connection: X-Secret-Hop\r\nX-Secret-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Kept: yes\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = json::parse(r.body);
  EXPECT_EQ(j["host"], "upstream.test:" + std::to_string(upstream.port()));
  const auto& h = j["headers"];
  EXPECT_FALSE(h.contains("Proxy-Authorization"));
  EXPECT_FALSE(h.contains("Proxy-Foo"));
  EXPECT_FALSE(h.contains("X-Secret-Hop"));
  EXPECT_FALSE(h.contains("Keep-Alive"));
  EXPECT_EQ(h.value("X-Kept", ""), "yes");
  EXPECT_EQ(last_row().host, "upstream.test");
}

TEST_F(ProxyTest, HostHeaderNamingAnAllowedHostDoesNotOpenADeniedTarget) {
  start_proxy(base_policy());
  auto r = proxy_get(port, "http://other.test:" + std::to_string(upstream.port()) + "/", "Host: upstream.test\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.host, "other.test");
  EXPECT_EQ(row.decision, "deny");
}

TEST_F(ProxyTest, PostBodyIsForwardedByteExact) {
  start_proxy(base_policy());
  const auto body = pattern_bytes(300000);
  ProxyConnection c(port);
  auto r = c.send("POST " + upstream_url("/body") + " HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_TRUE(r.body == body);
  auto row = last_row();
  // The body and the head as forwarded (a few dozen bytes here).
  EXPECT_GT(row.bytes_up, static_cast<std::int64_t>(body.size()));
  EXPECT_LT(row.bytes_up, static_cast<std::int64_t>(body.size() + 256));
  EXPECT_EQ(row.bytes_down, static_cast<std::int64_t>(body.size()));
}

TEST_F(ProxyTest, OriginFormRequestIsRefusedWith400AndAReason) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  auto r = c.send("GET /index.html HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  EXPECT_NE(r.header("x-netbox-reason").find("origin-form"), std::string::npos);
  EXPECT_NE(r.body.find("What you can do:"), std::string::npos) << r.body;
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");  // malformed, not a policy decision: as the header says
  EXPECT_EQ(row.status, 400);
  EXPECT_NE(row.reason.find("origin-form"), std::string::npos);
}

TEST_F(ProxyTest, GarbageRequestIsRefusedWith400AndLogged) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  auto r = c.send("HELLO\x01 there\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");
  EXPECT_EQ(row.status, 400);
  EXPECT_EQ(row.host, "");
}

TEST_F(ProxyTest, UnhandledMethodGets405) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  auto r = c.send("TRACE " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  EXPECT_EQ(upstream.requests(), 0u);
  EXPECT_EQ(last_row().status, 405);
  EXPECT_EQ(last_row().method, "TRACE");
}

TEST_F(ProxyTest, HeadersOverTheLimitGet431) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  std::string big(70 * 1024, 'a');
  auto r = c.send("GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\nX-Big: " + big + "\r\n\r\n");
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(upstream.requests(), 0u);
  EXPECT_EQ(last_row().status, 431);
}

TEST_F(ProxyTest, BracketsAroundANameAreRefusedNotReadAsTheName) {
  // Found by fuzz_http_request: "[upstream.test]" once passed as the allowed name.
  start_proxy(base_policy());
  auto r = proxy_get(port, "http://[upstream.test]:" + std::to_string(upstream.port()) + "/");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.header("x-netbox-reason").find("brackets"), std::string::npos);
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(ProxyTest, UserinfoInTheTargetIsRefusedAndNeverReachesTheRealHost) {
  start_proxy(base_policy());
  auto r = proxy_get(port, "http://upstream.test@127.0.0.1:" + std::to_string(upstream.port()) + "/");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.header("x-netbox-reason").find("userinfo"), std::string::npos);
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");
  EXPECT_EQ(row.host, "127.0.0.1");
}

TEST_F(ProxyTest, HttpsUrlInPlainRequestIsRefusedWith400) {
  start_proxy(base_policy());
  auto r = proxy_get(port, "https://upstream.test/");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.header("x-netbox-reason").find("CONNECT"), std::string::npos);
}

TEST_F(ProxyTest, UpstreamRefusingTheConnectionGives502) {
  start_proxy(base_policy());
  // A port where nothing listens: bind, learn the port, close.
  UpstreamServer gone;
  const auto dead = gone.port();
  gone.stop();
  start_proxy(base_policy(R"("ports": [)" + std::to_string(dead) + "]"));
  auto r = proxy_get(port, "http://upstream.test:" + std::to_string(dead) + "/");
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");  // the policy allowed it; the upstream failed
  EXPECT_EQ(row.status, 502);
  EXPECT_NE(row.error.find("refused"), std::string::npos) << row.error;
}

TEST_F(ProxyTest, MalformedUpstreamResponseGives502) {
  start_proxy(base_policy());
  auto r = proxy_get(port, upstream_url("/garbage"));
  EXPECT_EQ(r.status, 502);
  auto row = last_row();
  EXPECT_EQ(row.status, 502);
  EXPECT_FALSE(row.error.empty());
}

TEST_F(ProxyTest, UpstreamClosingWithoutAnswerGives502) {
  start_proxy(base_policy());
  auto r = proxy_get(port, upstream_url("/close"));
  EXPECT_EQ(r.status, 502);
}

TEST_F(ProxyTest, UpstreamNotAnsweringInTimeGives504) {
  start_proxy(base_policy(R"("limits": {"idle_timeout_ms": 300})"));
  auto r = proxy_get(port, upstream_url("/stall"));
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  EXPECT_EQ(last_row().status, 504);
}

}  // namespace
}  // namespace netbox::test

namespace netbox::test {
namespace {

TEST_F(ProxyTest, LargeAndChunkedResponsesStreamThroughByteExact) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  const std::size_t n = 20 * 1024 * 1024 + 7;
  auto big = c.send("GET " + upstream_url("/big?n=" + std::to_string(n)) + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  ASSERT_EQ(big.status, 200) << big.error;
  EXPECT_EQ(big.header("content-length"), std::to_string(n));
  EXPECT_TRUE(big.body == pattern_bytes(n));
  auto chunked = c.send("GET " + upstream_url("/chunked?n=300000") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  ASSERT_EQ(chunked.status, 200) << chunked.error;
  EXPECT_EQ(chunked.header("transfer-encoding"), "chunked");
  EXPECT_TRUE(chunked.body == pattern_bytes(300000));
  auto head = c.send("HEAD " + upstream_url("/big?n=5000") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  auto after = c.send("GET " + upstream_url("/x") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(after.status, 200) << "the connection stays usable after HEAD";
  EXPECT_EQ(upstream.connections(), 1u);
  auto all = rows();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].bytes_down, static_cast<std::int64_t>(n));
  EXPECT_EQ(all[1].bytes_down, 300000);
}

}  // namespace
}  // namespace netbox::test

namespace netbox::test {
namespace {

TEST_F(ProxyTest, InterimResponsesAreDroppedAndNeverAnswerTheNextRequest) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  auto first = c.send("GET " + upstream_url("/early-hints") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(first.status, 200) << first.error;
  EXPECT_NE(first.body.find("/early-hints"), std::string::npos);
  auto second = c.send("GET " + upstream_url("/second") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  EXPECT_EQ(second.status, 200);
  EXPECT_NE(second.body.find("/second"), std::string::npos) << second.body;
}

}  // namespace
}  // namespace netbox::test
