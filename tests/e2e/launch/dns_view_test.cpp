// The DNS view inside a real launch (issue 15 items 1, 5 and 7): the agent's resolver is
// the proxy, which answers the names its policy allows with synthetic addresses and
// refuses the others with NXDOMAIN and an audit row; other UDP stays refused.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchDnsView, AllowedNameResolvesToASyntheticAddressDeniedNameFailsWithARow) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(42);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));
  const auto db = dir.path() / "a.db";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           "getent hosts allowed.test; echo allowed=$?; getent hosts denied.test; echo denied=$?"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // `getent hosts` prefers the AAAA answer now that the link has IPv6 (ipv6_test.cpp).
  EXPECT_THAT(r.out, ::testing::ContainsRegex("(198\\.1[89]\\.[0-9]+\\.[0-9]+|2001:2:[0-9a-f:]+) +allowed\\.test"));
  EXPECT_THAT(r.out, HasSubstr("allowed=0"));
  EXPECT_THAT(r.out, HasSubstr("denied=2"));  // getent: not found
  // One row for the name, and one counting its repeats (getent asks A and AAAA).
  const auto rows = query(db, "SELECT kind, host, decision, reason FROM requests WHERE kind = 'dns' ORDER BY id");
  ASSERT_GE(rows.size(), 1u);
  ASSERT_LE(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row[1], "denied.test");
    EXPECT_EQ(row[2], "deny");
  }
  EXPECT_THAT(rows[0][3], HasSubstr("not in allow"));
  EXPECT_THAT(r.err, HasSubstr("dns_refused"));  // the person at the terminal sees it too
  expect_nothing_left(subnet);
}

TEST(LaunchDnsView, ATunnellingAttemptLeavesBoundedRowsAndOtherUdpStaysRefused) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(43);
  UdpSink udp;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));
  const auto db = dir.path() / "a.db";
  // 1,000 queries, each carrying 20 bytes of "data" in a label below a denied name, sent
  // to the resolver resolv.conf names; then UDP to another port of the host side.
  const std::string script = R"(
import os, random, socket, struct
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
nx = 0
for i in range(1000):
    label = os.urandom(20).hex().encode()
    name = bytes([len(label)]) + label + b"\x04leak\x04test\x00"
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01", (ns, 53))
    reply = s.recv(512)
    nx += (reply[3] & 0xf) == 3
print("nxdomain", nx)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(2)
try:
    u.sendto(b"x" * 40, (ns, int(os.environ["SINK"])))
    u.recv(512)
    print("udp answered")
except OSError as e:
    print("udp failed", e.errno)
)";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--env",
                           "SINK=" + std::to_string(udp.port()), "--", kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("nxdomain 1000"));
  EXPECT_THAT(r.out, HasSubstr("udp failed"));
  EXPECT_EQ(udp.packets(), 0);
  const auto rows = query(db, "SELECT host FROM requests WHERE kind = 'dns'");
  EXPECT_LE(rows.size(), 33u);  // 32 names a minute, one row counting the rest
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back()[0], "*");
  expect_nothing_left(subnet);
}

TEST(LaunchDnsView, ProxyVarsLeavesTheAgentWithoutAResolver) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(44);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));
  auto r = launch(subnet, {"--network", "proxy-vars", "--policy", policy.string(), "--audit-db",
                           (dir.path() / "a.db").string(), "--", kSh, "-c",
                           "getent hosts allowed.test; echo allowed=$?; echo java=$JAVA_TOOL_OPTIONS"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("allowed=2"));
  EXPECT_THAT(r.out, Not(HasSubstr("198.18.")));
  EXPECT_THAT(r.out, HasSubstr("java=-Dhttp.proxyHost=127.0.0.1 "));
  auto bad = launch(subnet, {"--network", "socks", "--", kSh, "-c", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--network 'socks': expected transparent or proxy-vars"));
  expect_nothing_left(subnet);
}

TEST(LaunchDnsView, ThePolicysSandboxNetworkAppliesUnlessTheFlagIsGiven) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(49);
  test::TempDir dir;
  auto json = policy_json(8080);
  json.insert(json.rfind('}'), R"(, "sandbox": {"network": "proxy-vars"})");
  auto policy = dir.write("policy.json", json);
  const std::vector<std::string> cmd = {"--", kSh, "-c", "getent hosts allowed.test; echo allowed=$?"};
  std::vector<std::string> args = {"--policy", policy.string(), "--audit-db", (dir.path() / "a.db").string()};
  std::vector<std::string> by_policy = args;
  by_policy.insert(by_policy.end(), cmd.begin(), cmd.end());
  auto r = launch(subnet, by_policy);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("allowed=2"));
  args.insert(args.end(), {"--network", "transparent"});
  args.insert(args.end(), cmd.begin(), cmd.end());
  auto flagged = launch(subnet, args);
  EXPECT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_THAT(flagged.out, HasSubstr("allowed=0"));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
