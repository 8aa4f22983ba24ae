// Issue 22 item 1: every connection from an agent is that agent's, whatever its source.
// On a veth the agent could bind its own IPv6 link-local address (no privilege needed)
// and connect from it to a port its profile denies and the top level allows, hoping to
// pass as an unregistered, `anonymous` client decided with the top-level policy. Since
// issue 24 a shared proxy's agent has no link either (sockets in its namespace, passed
// over the control socket): no such address exists, and its one way out is its profile.
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"

#include <sstream>

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// allowed.test on the upstream's port is allowed at the top level only: agents.restricted
// keeps the name (its DNS view answers it) but allows port 80 alone.
std::string policy(std::uint16_t port) {
  return R"({
  "version": 1,
  "allow": ["allowed.test"],
  "ports": [80, )" + std::to_string(port) + R"(],
  "internal": { "allow": ["::1/128"] },
  "resolve": { "allowed.test": ["::1"] },
  "agents": { "restricted": { "ports": [80] } }
})";
}

// One GET of allowed.test's IPv6 address from the agent's own address, then one from its
// link-local address on eth0; prints the status line or the error of each.
const char* kAgentScript = R"PY(
import errno, socket, sys, time
port = int(sys.argv[1])
# The link-local address, once duplicate address detection is over (a tentative address
# cannot be bound); none at all without a link (20 s at most).
for _ in range(200):
    lines = [l.split() for l in open("/proc/net/if_inet6")]
    ll = [(l[0], l[5]) for l in lines if l[5] != "lo" and l[0].startswith("fe80") and not int(l[4], 16) & 0x40]
    if ll or all(l[5] == "lo" for l in lines):
        break
    time.sleep(0.1)
print("linklocal-address", "yes" if ll else "none")
target = socket.getaddrinfo("allowed.test", port, socket.AF_INET6, socket.SOCK_STREAM)[0][4][0]
def get(source):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(20)
    if source:
        s.bind((socket.inet_ntop(socket.AF_INET6, bytes.fromhex(source[0])), 0, 0, socket.if_nametoindex(source[1])))
    s.connect((target, port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: close\r\n\r\n" % port)
    data = s.recv(100)
    return data.split(b"\r\n")[0].decode() if data else "closed"
def attempt(what, fn):
    try:
        print(what, fn())
    except socket.timeout:
        print(what, "timeout")
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e)))
attempt("own", lambda: get(None))
if ll:
    attempt("linklocal", lambda: get(ll[0]))
)PY";

void expect_link_local_source_refused(const Subnet& subnet) {
  test::TempDir dir;
  Ipv6LoopbackUpstream upstream(dir.path());
  const std::uint16_t port = upstream.port();
  ASSERT_NE(port, 0) << upstream.err();
  auto policy_file = dir.write("policy.json", policy(port));
  auto db = dir.path() / "a.db";
  HostDir host;
  SharedProxy proxy(host, policy_file);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  std::vector<std::string> args{"--proxy-control", proxy.socket().string()};
  args.insert(args.end(), {"--name", "link-source", "--profile", "restricted", "--", kPython, "-c", kAgentScript,
                           std::to_string(port)});
  auto r = launch(subnet, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("linklocal-address none")) << "the agent has a link of its own";
  EXPECT_THAT(r.out, HasSubstr("own HTTP/1.1 403")) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("linklocal HTTP"))) << r.out;
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  db = proxy.store();
  const auto agents = test::query(db, "SELECT DISTINCT agent FROM requests");
  EXPECT_EQ(agents, (std::vector<std::vector<std::string>>{{"link-source"}})) << r.err;
  expect_nothing_left(subnet);
}

TEST(LaunchLinkSource, ASharedProxysAgentHasNoOtherSourceToTry) {
  NETBOX_REQUIRE_ROOT();
  expect_link_local_source_refused(test_subnet(132));
}

}  // namespace
}  // namespace netbox::launch_test
