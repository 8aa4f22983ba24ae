// netbox's own endpoints are never a destination: a policy that allows 127.0.0.1 (as a
// developer's might, to reach a local service) still cannot be used to loop the proxy into
// itself or to read the admin API, which shows every agent's traffic.
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"

#include <fstream>

namespace netbox::test {
namespace {

std::string loopback_policy(const std::vector<unsigned short>& ports, const std::string& mode = "enforce") {
  std::string list;
  for (auto p : ports) list += (list.empty() ? "" : ", ") + std::to_string(p);
  return R"({"version": 1, "mode": ")" + mode + R"(", "allow": ["127.0.0.1"], "ports": [)" + list +
         R"(], "internal": {"allow": ["127.0.0.1/32"]}})";
}

class OwnEndpointTest : public ProxyTest {
 protected:
  // The port is known only once the proxy listens, so the policy naming it is a reload.
  void start_allowing_own_port(const std::string& mode) {
    start_proxy(loopback_policy({upstream.port()}));
    std::ofstream(policy_path) << loopback_policy({port, upstream.port()}, mode);
    ASSERT_TRUE(server->reload_policy());
  }
};

TEST_F(OwnEndpointTest, RequestsToTheProxysOwnListenerAreDeniedWhateverThePolicySays) {
  start_allowing_own_port("enforce");
  // The same policy reaches an ordinary loopback service...
  EXPECT_EQ(proxy_get(port, "http://127.0.0.1:" + std::to_string(upstream.port()) + "/").status, 200);
  // ...but not the proxy itself, by plain HTTP or by CONNECT.
  const auto self = "127.0.0.1:" + std::to_string(port);
  auto r = proxy_get(port, "http://" + self + "/");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.header("x-netbox-decision"), "deny");
  EXPECT_NE(r.header("x-netbox-reason").find("netbox's own"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_EQ(proxy_connect(port, self).status, 403);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "netbox");
}

TEST_F(OwnEndpointTest, ReportModeDoesNotLetARequestReachTheProxyItself) {
  start_allowing_own_port("report");
  auto r = proxy_get(port, "http://127.0.0.1:" + std::to_string(port) + "/");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(last_row().rule, "netbox");
}

TEST(OwnEndpoints, TheAdminEndpointCannotBeReachedThroughTheProxy) {
  TempDir dir;
  const auto port = free_port();
  const auto admin = free_port();
  const auto policy = dir.write("policy.json", loopback_policy({admin}));
  const auto db = dir.path() / "audit.db";
  BackgroundProcess proxy(proxy_command(policy, port, db, {"--admin", "127.0.0.1:" + std::to_string(admin), "--admin-insecure"}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  ASSERT_TRUE(wait_for_port(admin)) << proxy.log();
  auto r = proxy_get(port, "http://127.0.0.1:" + std::to_string(admin) + "/api/requests");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.body.find("\"requests\""), std::string::npos) << "the audit API answered through the proxy";
  EXPECT_NE(r.header("x-netbox-reason").find("admin endpoint"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_EQ(proxy_connect(port, "127.0.0.1:" + std::to_string(admin)).status, 403);
}


// --- the unspecified addresses (issue 12, item 13) ---------------------------------
// Linux connects a socket to 0.0.0.0 or :: through loopback, so each spelling of them is
// this host: the upstream on 127.0.0.1, the admin endpoint, the proxy itself. Refused
// with rule `netbox` in report mode, and in enforce mode whatever internal.allow says.

const std::vector<std::string> kUnspecified = {"0.0.0.0", "0", "[::ffff:0.0.0.0]", "[::]", "[::ffff:0:0]", "0.0.0.1"};

std::string unspecified_policy(const std::string& mode, const std::vector<unsigned short>& ports) {
  std::string list;
  for (auto p : ports) list += (list.empty() ? "" : ", ") + std::to_string(p);
  return R"({"version": 1, "mode": ")" + mode + R"(", "allow": ["0.0.0.0/8", "::/128", "127.0.0.1"], "ports": [)" + list +
         R"(], "internal": {"allow": ["0.0.0.0/8", "::/96", "::ffff:0.0.0.0/104", "127.0.0.1/32"]}})";
}

class UnspecifiedDestinationTest : public ProxyTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(UnspecifiedDestinationTest, EverySpellingIsRefusedWithRuleNetbox) {
  const auto mode = GetParam();
  start_proxy(unspecified_policy(mode, {upstream.port()}));
  std::ofstream(policy_path) << unspecified_policy(mode, {port, upstream.port()});
  ASSERT_TRUE(server->reload_policy());
  for (const auto& host : kUnspecified) {
    SCOPED_TRACE(mode + " " + host);
    auto r = proxy_get(port, "http://" + host + ":" + std::to_string(upstream.port()) + "/");
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(r.header("x-netbox-decision"), "deny");
    EXPECT_NE(r.header("x-netbox-reason").find("unspecified address"), std::string::npos) << r.header("x-netbox-reason");
    EXPECT_EQ(last_row().rule, "netbox");
    auto c = proxy_connect(port, host + ":" + std::to_string(port));
    EXPECT_EQ(c.status, 403) << "CONNECT " << host << " opened a tunnel back into the proxy";
    EXPECT_EQ(last_row().rule, "netbox");
  }
  EXPECT_EQ(upstream.connections(), 0u) << "a request through the proxy reached the loopback upstream";
}

TEST_P(UnspecifiedDestinationTest, ANameResolvingToAnUnspecifiedAddressIsRefusedToo) {
  const auto mode = GetParam();
  start_proxy(R"({"version": 1, "mode": ")" + mode + R"(", "allow": ["zero.test", "nothing.test"], "ports": [)" +
              std::to_string(upstream.port()) + R"(], "internal": {"allow": ["0.0.0.0/8", "::/96"]},
              "resolve": {"zero.test": ["0.0.0.0"], "nothing.test": ["::"]}})");
  for (const auto* host : {"zero.test", "nothing.test"}) {
    auto r = proxy_get(port, std::string("http://") + host + ":" + std::to_string(upstream.port()) + "/");
    EXPECT_EQ(r.status, 403) << host;
    EXPECT_EQ(last_row().rule, "netbox") << host;
  }
  EXPECT_EQ(upstream.connections(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, UnspecifiedDestinationTest, ::testing::Values("report", "enforce"));

TEST(OwnEndpoints, TheAdminEndpointCannotBeReachedAtAnUnspecifiedAddressInReportMode) {
  TempDir dir;
  const auto port = free_port();
  const auto admin = free_port();
  const auto policy = dir.write("policy.json", unspecified_policy("report", {admin, port}));
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db",
                                        {"--admin", "127.0.0.1:" + std::to_string(admin), "--admin-insecure"}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  ASSERT_TRUE(wait_for_port(admin)) << proxy.log();
  for (const auto& host : kUnspecified) {
    auto r = proxy_get(port, "http://" + host + ":" + std::to_string(admin) + "/api/requests");
    EXPECT_EQ(r.status, 403) << host << ": " << r.body;
    EXPECT_EQ(r.body.find("\"requests\""), std::string::npos) << host << ": the audit API answered through the proxy";
    EXPECT_EQ(proxy_connect(port, host + ":" + std::to_string(port)).status, 403) << host;
  }
}

// --- the launchers' subnet pool (issue 12, item 7) ---------------------------------
// Every launch's host-side veth address is in the pool; a host service on 0.0.0.0 and
// other launches' embedded proxies answer there. A policy allowing 10.0.0.0/8 must not
// reach them. Here the pool is set to loopback, where this test's upstream listens, so
// nothing leaves the host whether or not the guard holds.

TEST_F(ProxyTest, TheLaunchSubnetPoolIsNeverADestination) {
  configure = [](proxy::ProxyOptions& o) { o.launch_subnets = {*policy::Cidr::parse("127.0.0.0/24")}; };
  start_proxy(loopback_policy({upstream.port()}));
  auto r = proxy_get(port, "http://127.0.0.1:" + std::to_string(upstream.port()) + "/");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.header("x-netbox-reason").find("launch subnet 127.0.0.0/24"), std::string::npos)
      << r.header("x-netbox-reason");
  EXPECT_EQ(last_row().rule, "netbox");
  EXPECT_EQ(proxy_connect(port, "127.0.0.1:" + std::to_string(upstream.port())).status, 403);
  EXPECT_EQ(upstream.connections(), 0u);
}

// The mechanism is tested above on loopback (no packet may go to 10.213/16 from a test
// whose guard might be broken); here only that the default is the launcher's default
// subnet and the range of every launch's IPv6 link.
TEST(OwnEndpoints, TheDefaultPoolIsTheLaunchersDefaultSubnetAndIpv6LinkRange) {
  const proxy::ProxyOptions o;
  ASSERT_EQ(o.launch_subnets.size(), 2u);
  EXPECT_EQ(o.launch_subnets[0].to_string(), "10.213.0.0/16");
  EXPECT_EQ(o.launch_subnets[1].to_string(), "fd00:6e62:7800::/48");
}

TEST(OwnEndpoints, TheProxysSubnetFlagSetsThePool) {
  TempDir dir;
  UpstreamServer upstream;
  const auto port = free_port();
  const auto policy = dir.write("policy.json", loopback_policy({upstream.port()}));
  const auto bad = run_netbox({"proxy", "--policy", policy.string(), "--subnet", "10.213.0.1/16"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--subnet 10.213.0.1/16"), std::string::npos) << bad.err;
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db", {"--subnet", "127.0.0.1/32"}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  EXPECT_EQ(proxy_get(port, "http://127.0.0.1:" + std::to_string(upstream.port()) + "/").status, 403);
  EXPECT_EQ(upstream.connections(), 0u);
}

}  // namespace
}  // namespace netbox::test
