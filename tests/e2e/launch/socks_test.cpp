// SOCKS5 inside a real launch: the agent's ALL_PROXY names the proxy's SOCKS5 listener
// on its veth (socks5h://, so the proxy resolves and decides the name), its nftables let
// that port through like the HTTP proxy's, and the rows say `socks` with the host name.
// Both with the embedded proxy and with a running `netbox proxy --control`.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Prints ALL_PROXY, then fetches an allowed and a denied URL through it.
std::string through_all_proxy(std::uint16_t port) {
  const std::string p = std::to_string(port);
  return std::string("echo \"all_proxy=$ALL_PROXY\"; ") + kCurl + " -sS -x \"$ALL_PROXY\" http://allowed.test:" + p +
         "/hello; echo; " + kCurl + " -sS -x \"$ALL_PROXY\" http://denied.test:" + p + "/; echo \"denied_exit=$?\"";
}

// The allowed connection carries plain HTTP: its request has a row of its own under it.
void expect_socks_rows(const fs::path& db) {
  auto rows = query(db, "SELECT kind, host, decision, method, parent_id IS NULL FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"socks", "allowed.test", "allow", "CONNECT", "1"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"socks", "allowed.test", "allow", "GET", "0"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"socks", "denied.test", "deny", "CONNECT", "1"}));
}

TEST(LaunchSocks, AllProxyIsTheSocks5ListenerAndReachesAnAllowedUpstream) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(68);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  auto db = dir.path() / "audit.db";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           through_all_proxy(upstream.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("all_proxy=socks5h://127.0.0.1:1080"));
  EXPECT_THAT(r.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(r.out, HasSubstr("denied_exit=97")) << "curl: the SOCKS5 proxy refused the connection";
  expect_socks_rows(db);
  expect_nothing_left(subnet);
}

TEST(LaunchSocks, ARunningProxyGivesEachAgentASocks5ListenerToo) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(69);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--", kSh, "-c", through_all_proxy(upstream.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("all_proxy=socks5h://127.0.0.1:1080"));  // its own socket, in its namespace
  EXPECT_THAT(r.out, HasSubstr(HttpServer::kBody));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_socks_rows(proxy.store());
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
