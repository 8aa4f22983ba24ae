// IPv6 inside the namespace is refused at once, never left to time out (issue 15 item 6):
// the DNS view answers AAAA with no records, so resolvers hand out IPv4 only, and a
// connection to an IPv6 address fails immediately with an errno the program can report.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;

TEST(LaunchIpv6, NamesResolveToIpv4OnlyAndIpv6ConnectionsFailAtOnce) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(102);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));
  // Waits for eth0's link-local address to leave the tentative state (DAD) first, so a
  // link-local connection really goes out instead of failing on the address.
  const std::string script = R"PY(
import errno, socket, time
def tentative():
    return any(f[5] == "eth0" and int(f[4], 16) & 0x40 for f in (l.split() for l in open("/proc/net/if_inet6")))
for _ in range(100):
    if not tentative(): break
    time.sleep(0.1)
print("families:", sorted({a[0].name for a in socket.getaddrinfo("allowed.test", 80, proto=socket.IPPROTO_TCP)}))
try:
    socket.getaddrinfo("allowed.test", 80, socket.AF_INET6)
    print("aaaa: answered")
except socket.gaierror as e:
    print("aaaa:", "none" if e.args[0] in (socket.EAI_NONAME, socket.EAI_NODATA) else e)
for addr in ["2001:db8::1", "2001:2::5", "fe80::1%eth0"]:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect((addr, 80))
        r = "connected"
    except socket.timeout:
        r = "timeout"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e))
    print("v6", addr, r)
)PY";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", (dir.path() / "a.db").string(), "--",
                           kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("families: ['AF_INET']"));
  EXPECT_THAT(r.out, HasSubstr("aaaa: none"));
  EXPECT_THAT(r.out, HasSubstr("v6 2001:db8::1 ENETUNREACH"));
  EXPECT_THAT(r.out, HasSubstr("v6 2001:2::5 ENETUNREACH"));
  EXPECT_THAT(r.out, HasSubstr("v6 fe80::1%eth0 "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("connected")));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("timeout")));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
