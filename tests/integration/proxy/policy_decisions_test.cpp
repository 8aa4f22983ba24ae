// What the policy decides, as the agent sees it (status, headers, body) and as the
// audit log records it (decision, rule, reason): exactly the policy engine's Decision.
#include "proxy_fixture.hpp"

#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

namespace netbox::test {
namespace {

class PolicyDecisionTest : public ProxyTest {
 protected:
  // The decision the policy engine itself makes for this host and port (name step).
  policy::Decision expected_name_decision(const std::string& policy_json, const std::string& host, int p) {
    auto pol = policy::parse_policy(policy_json, "test");
    auto h = policy::parse_host(host);
    return policy::decide_name(pol.base, *h.host, static_cast<std::uint16_t>(p));
  }
  std::string port_text() const { return std::to_string(upstream.port()); }
};

TEST_F(PolicyDecisionTest, DeniedHostGets403WithThePolicysRuleAndReason) {
  const auto pol = base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})");
  start_proxy(pol);
  auto r = proxy_get(port, "http://other.test:" + port_text() + "/secret");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.header("x-netbox-decision"), "deny");
  const auto want = expected_name_decision(pol, "other.test", upstream.port());
  EXPECT_EQ(r.header("x-netbox-reason"), want.reason);
  EXPECT_NE(r.body.find("other.test"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("What you can do:"), std::string::npos) << r.body;
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, want.rule);
  EXPECT_EQ(row.reason, want.reason);
  EXPECT_EQ(row.status, 403);
  EXPECT_EQ(row.host, "other.test");
  EXPECT_EQ(row.path, "/secret");
}

TEST_F(PolicyDecisionTest, PortNotInTheListIsDenied) {
  const auto pol = base_policy();
  start_proxy(pol);
  auto r = proxy_get(port, "http://upstream.test:22/");
  EXPECT_EQ(r.status, 403);
  auto row = last_row();
  EXPECT_EQ(row.rule, "ports");
  EXPECT_EQ(row.reason, expected_name_decision(pol, "upstream.test", 22).reason);
  EXPECT_EQ(row.port, 22);
}

TEST_F(PolicyDecisionTest, WildcardMatchesSubdomainsButNotTheApex) {
  start_proxy(base_policy(R"("allow": ["*.wild.test"], "resolve": {"a.wild.test": ["127.0.0.1"], "wild.test": ["127.0.0.1"]})"));
  EXPECT_EQ(proxy_get(port, "http://a.wild.test:" + port_text() + "/").status, 200);
  auto apex = proxy_get(port, "http://wild.test:" + port_text() + "/");
  EXPECT_EQ(apex.status, 403);
  auto all = rows();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].decision, "allow");
  EXPECT_EQ(all[0].rule, "allow[0] *.wild.test");
  EXPECT_EQ(all[1].decision, "deny");
}

TEST_F(PolicyDecisionTest, DenyBeatsAllow) {
  start_proxy(base_policy(R"("allow": ["*.wild.test"], "deny": ["bad.wild.test"],
                              "resolve": {"bad.wild.test": ["127.0.0.1"]})"));
  auto r = proxy_get(port, "http://bad.wild.test:" + port_text() + "/");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(last_row().rule, "deny[0] bad.wild.test");
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(PolicyDecisionTest, TrailingDotAndUpperCaseAreTheSameHost) {
  start_proxy(base_policy(R"("deny": ["bad.test"], "resolve": {"upstream.test": ["127.0.0.1"], "bad.test": ["127.0.0.1"]})"));
  EXPECT_EQ(proxy_get(port, "http://UPSTREAM.Test.:" + port_text() + "/").status, 200);
  EXPECT_EQ(proxy_get(port, "http://BAD.TEST.:" + port_text() + "/").status, 403);
  auto all = rows();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].host, "upstream.test");
  EXPECT_EQ(all[1].host, "bad.test");
  EXPECT_EQ(all[1].rule, "deny[0] bad.test");
}

TEST_F(PolicyDecisionTest, EveryLiteralFormOfAnInternalAddressIsRefused) {
  // The allow list even names the metadata network: internal ranges still win.
  start_proxy(base_policy(R"("allow": ["upstream.test", "169.254.0.0/16", "127.0.0.0/8"], "ports": [80, 443])"));
  const std::vector<std::string> forms = {
      "169.254.169.254", "2852039166",         "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518",
      "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "127.0.0.2", "2130706434", "0x7f000002",
      "0177.0.0.2", "127.2", "[::1]", "[::ffff:127.0.0.2]", "0.0.0.0"};
  for (const auto& f : forms) {
    auto r = proxy_get(port, "http://" + f + "/latest/meta-data/");
    EXPECT_EQ(r.status, 403) << f << ": " << r.body;
    EXPECT_EQ(r.header("x-netbox-decision"), "deny") << f;
    auto row = last_row();
    EXPECT_EQ(row.decision, "deny") << f;
    EXPECT_EQ(row.rule, "internal") << f << ": " << row.reason;
    EXPECT_EQ(row.status, 403) << f;
  }
  for (const auto& f : {"169.254.169.254:443", "[::ffff:a9fe:a9fe]:443", "0x7f000002:443"}) {
    auto r = proxy_connect(port, f);
    EXPECT_EQ(r.status, 403) << f;
    EXPECT_EQ(last_row().rule, "internal") << f;
    EXPECT_EQ(last_row().kind, "connect") << f;
  }
}

TEST_F(PolicyDecisionTest, ReportModeLetsEverythingThroughAndMarksTheRow) {
  const auto pol = base_policy(R"("mode": "report", "resolve": {"upstream.test": ["127.0.0.1"], "unlisted.test": ["127.0.0.1"]})");
  start_proxy(pol);
  auto r = proxy_get(port, "http://unlisted.test:" + port_text() + "/r");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(upstream.requests(), 1u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "report");
  // The reason it would have been denied (here the address step's wording of it).
  EXPECT_NE(row.reason.find("unlisted.test"), std::string::npos) << row.reason;
  EXPECT_NE(row.reason.find("not in allow"), std::string::npos) << row.reason;
  EXPECT_EQ(row.status, 200);
  // An allowed host stays "allow" in report mode.
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
  EXPECT_EQ(last_row().decision, "allow");
}

}  // namespace
}  // namespace netbox::test
