// `rules` on plain HTTP (issue 16): after the host is let through, the method and the
// canonical path decide, first match wins, and a host some rule names is denied what no
// rule allows. The upstream sees exactly the canonical path the rules matched; a path
// whose meaning servers disagree on never reaches it.
#include "proxy_fixture.hpp"

#include <nlohmann/json.hpp>

namespace netbox::test {
namespace {

class RequestRulesTest : public ProxyTest {
 protected:
  // upstream.test is allowed; its requests are limited to reading /repos/acme/*.
  void start() {
    start_proxy(base_policy(R"("rules": [
      {"host": "upstream.test", "methods": ["GET", "HEAD"], "paths": ["/repos/acme/*"], "action": "allow"}])"));
  }
  // The target the upstream received, from its echo.
  static std::string seen_target(const Reply& r) { return nlohmann::json::parse(r.body).at("target"); }
};

TEST_F(RequestRulesTest, AnAllowedGetReachesTheUpstreamAndCitesTheRule) {
  start();
  auto r = proxy_get(port, upstream_url("/repos/acme/widget"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(seen_target(r), "/repos/acme/widget");
  auto row = last_row();
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(row.rule, "rules[0] upstream.test GET,HEAD /repos/acme/*");
  EXPECT_EQ(row.path, "/repos/acme/widget");
}

TEST_F(RequestRulesTest, APostToAGetOnlyRuleIs403NamingTheRules) {
  start();
  ProxyConnection c(port);
  auto r = c.send("POST " + upstream_url("/repos/acme/widget") +
                  " HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.header("x-netbox-decision"), "deny");
  EXPECT_NE(r.header("x-netbox-reason").find("POST /repos/acme/widget on upstream.test"), std::string::npos)
      << r.header("x-netbox-reason");
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "rules");
  EXPECT_EQ(row.status, 403);
  EXPECT_EQ(row.method, "POST");
}

TEST_F(RequestRulesTest, AnExplicitDenyRuleIsCitedInTheHeader) {
  start_proxy(base_policy(R"("rules": [
    {"host": "upstream.test", "paths": ["/admin/*"], "action": "deny"},
    {"host": "upstream.test", "action": "allow"}])"));
  auto r = proxy_get(port, upstream_url("/admin/users"));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.header("x-netbox-reason").find("denied by rules[0] upstream.test"), std::string::npos)
      << r.header("x-netbox-reason");
  EXPECT_EQ(last_row().rule.rfind("rules[0] upstream.test", 0), 0u) << last_row().rule;
  EXPECT_EQ(proxy_get(port, upstream_url("/public")).status, 200);
  EXPECT_EQ(upstream.requests(), 1u);
}

TEST_F(RequestRulesTest, APathOutsideTheRuleIsDeniedByDefault) {
  start();
  auto r = proxy_get(port, upstream_url("/repos/other/widget"));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.header("x-netbox-reason").find("rules name this host"), std::string::npos);
  EXPECT_EQ(proxy_get(port, upstream_url("/repos/acme")).status, 403) << "the pattern needs a segment after acme/";
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(RequestRulesTest, DotSegmentsAreResolvedBeforeMatchingAndTheCanonicalPathIsForwarded) {
  start();
  // Climbing out of /repos/acme is matched where it lands, not where it started.
  EXPECT_EQ(proxy_get(port, upstream_url("/repos/acme/../evil/x")).status, 403);
  EXPECT_EQ(upstream.requests(), 0u);
  // Landing inside: forwarded as the path that was matched, never as sent.
  auto r = proxy_get(port, upstream_url("/repos/x/../acme/./widget?ref=main"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(seen_target(r), "/repos/acme/widget?ref=main");
  auto doubled = proxy_get(port, upstream_url("//repos//acme//widget"));
  ASSERT_EQ(doubled.status, 200) << doubled.body;
  EXPECT_EQ(seen_target(doubled), "/repos/acme/widget");
  auto escaped = proxy_get(port, upstream_url("/repos/%61cme/widget"));
  ASSERT_EQ(escaped.status, 200) << escaped.body;
  EXPECT_EQ(seen_target(escaped), "/repos/acme/widget");
}

TEST_F(RequestRulesTest, EncodedDotSegmentsAndSlashesAreRefusedWith400) {
  start();
  for (const std::string path : {"/repos/acme/%2e%2e/evil", "/repos/acme/%2E%2E/%2E%2E/evil", "/repos/acme%2F..%2Fevil",
                                 "/repos/acme/x%2Fy", "/repos/acme/..;/evil", "/repos/acme/%5C..%5Cevil"}) {
    auto r = proxy_get(port, upstream_url(path));
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_EQ(r.header("x-netbox-decision"), "deny") << path;
    EXPECT_NE(r.header("x-netbox-reason").find("the path is refused"), std::string::npos) << path;
    EXPECT_NE(r.header("x-netbox-reason").find("rules name upstream.test"), std::string::npos)
        << r.header("x-netbox-reason");
  }
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.status, 400);
  EXPECT_EQ(row.rule, "rules");
}

TEST_F(RequestRulesTest, AHostNoRuleNamesIsLeftToTheHostDecisionAndForwardedAsSent) {
  start_proxy(base_policy(R"("allow": ["upstream.test", "free.test"],
    "resolve": {"upstream.test": ["127.0.0.1"], "free.test": ["127.0.0.1"]},
    "rules": [{"host": "upstream.test", "paths": ["/ok"], "action": "allow"}])"));
  auto r = proxy_get(port, "http://free.test:" + std::to_string(upstream.port()) + "/a/../b//c");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(seen_target(r), "/a/../b//c");
  EXPECT_EQ(last_row().rule, "allow[1] free.test");
}

TEST_F(RequestRulesTest, AConnectToARuledHostThatIsNotInspectedIsDenied) {
  start();
  auto r = proxy_connect(port, "upstream.test:" + std::to_string(upstream.port()));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.header("x-netbox-reason").find("add it to inspect"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_EQ(upstream.connections(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.kind, "connect");
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "rules");
}

TEST_F(RequestRulesTest, ReportModeLetsARuleDenialThroughAndRecordsIt) {
  start_proxy(base_policy(R"("mode": "report", "rules": [
    {"host": "upstream.test", "methods": ["GET"], "paths": ["/ok"], "action": "allow"}])"));
  EXPECT_EQ(proxy_get(port, upstream_url("/other")).status, 200);
  auto row = last_row();
  EXPECT_EQ(row.decision, "report");
  EXPECT_EQ(row.rule, "rules");
}

TEST_F(RequestRulesTest, AReloadBringingInRulesAppliesThem) {
  start_proxy(base_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/repos/other")).status, 200);
  dir.write("policy.json", base_policy(R"("rules": [
    {"host": "upstream.test", "paths": ["/repos/acme/*"], "action": "allow"}])"));
  ASSERT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/repos/other")).status, 403);
  EXPECT_EQ(proxy_get(port, upstream_url("/repos/acme/x")).status, 200);
}

}  // namespace
}  // namespace netbox::test
