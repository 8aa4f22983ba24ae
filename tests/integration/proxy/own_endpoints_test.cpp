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
  BackgroundProcess proxy(proxy_command(policy, port, db, {"--admin", "127.0.0.1:" + std::to_string(admin)}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  ASSERT_TRUE(wait_for_port(admin)) << proxy.log();
  auto r = proxy_get(port, "http://127.0.0.1:" + std::to_string(admin) + "/api/requests");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.body.find("\"requests\""), std::string::npos) << "the audit API answered through the proxy";
  EXPECT_NE(r.header("x-netbox-reason").find("admin endpoint"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_EQ(proxy_connect(port, "127.0.0.1:" + std::to_string(admin)).status, 403);
}

}  // namespace
}  // namespace netbox::test
