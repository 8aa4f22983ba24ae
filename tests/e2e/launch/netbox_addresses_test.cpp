// netbox's own host-side addresses are never a destination (issue 12, item 7): with a
// policy that allows 10.0.0.0/8 (common in corporate policies), an agent asking the proxy
// for an address of the launch subnet pool (where a running proxy listens for clients
// registered by address, and where veths used to be) would reach any host service bound
// to 0.0.0.0 there. Every address of the pool is refused with rule `netbox`, in enforce
// and in report mode.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class NetboxAddresses : public ::testing::TestWithParam<const char*> {};

TEST_P(NetboxAddresses, AHostServiceOnTheWildcardAddressIsNotReachableThroughALaunchSubnetAddress) {
  NETBOX_REQUIRE_ROOT();
  const std::string mode = GetParam();
  const auto subnet = test_subnet(mode == "enforce" ? 70 : 71);
  HttpServer host_service("0.0.0.0");  // answers on every host address, the veth's too
  test::TempDir dir;
  const std::string port = std::to_string(host_service.port());
  auto policy = dir.write("policy.json", R"({"version": 1, "mode": ")" + mode + R"(", "allow": ["10.0.0.0/8"],
      "ports": [)" + port + R"(], "internal": {"allow": ["10.0.0.0/8"]}})");
  // The agent reaches the running proxy by its own socket in its namespace ($http_proxy),
  // and asks it for the .1 of its launch's /24, where the veth's host side used to be.
  HostDir host;
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string script = "echo proxy=$http_proxy; " + std::string(kCurl) + " -sS -D - -o /dev/null http://" +
                             subnet.addr_prefix + "1:" + port + "/";
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", "prober", "--", kSh, "-c", script});
  EXPECT_THAT(r.out, HasSubstr("proxy=http://127.0.0.1:3128")) << r.err;
  EXPECT_THAT(r.out, HasSubstr("403")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Decision: deny"));
  EXPECT_THAT(r.out, HasSubstr("launch subnet"));
  EXPECT_THAT(r.out, Not(HasSubstr(" 200 ")));
  EXPECT_EQ(host_service.connections(), 0) << "the proxy connected the agent to a host service";
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  auto rows = query(proxy.store(), "SELECT decision, rule FROM requests");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"deny", "netbox"}));
  expect_nothing_left(subnet);
}

INSTANTIATE_TEST_SUITE_P(Modes, NetboxAddresses, ::testing::Values("enforce", "report"));

}  // namespace
}  // namespace netbox::launch_test
