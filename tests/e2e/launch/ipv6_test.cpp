// IPv6 inside the namespace (issue 15 item 6): the veth has an IPv6 pair, allowed names get
// AAAA answers from the agent's synthetic IPv6 pool, and every IPv6 TCP connection is
// captured and decided like a CONNECT, with a `transparent` row; other IPv6 is refused at
// once, and the host's own IPv6 services stay out of reach. (`[::1]` inside is the
// namespace's own loopback: it never leaves, so the internal literals dialled here are a
// unique-local one, the host side's own address and an unmapped synthetic one.)
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <sstream>

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A host service on every IPv6 address ([::]), as a database or admin port would be.
class HostIpv6Listener {
 public:
  HostIpv6Listener() : fd_(::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0)) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot listen on [::]");
    port_ = ntohs(a.sin6_port);
  }
  ~HostIpv6Listener() { ::close(fd_); }
  std::uint16_t port() const { return port_; }
  // Whether any connection ever reached it (non-blocking accept).
  bool reached() const {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c >= 0) ::close(c);
    return c >= 0;
  }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

std::string ipv6_policy(std::uint16_t upstream_port, std::uint16_t host_service_port) {
  return R"({
  "version": 1,
  "allow": ["allowed.test"],
  "ports": [80, )" + std::to_string(upstream_port) + ", " + std::to_string(host_service_port) + R"(],
  "internal": { "allow": ["::1/128"] },
  "resolve": { "allowed.test": ["::1"], "denied.test": ["::1"] }
})";
}

// The host's IPv6 address to attack: given (the embedded proxy's agent has no link, so one
// of the host's own), else the host side of the veth, the agent's own minus one (a /126).
const char* kAgentScript = R"PY(
import errno, socket, sys
port = int(sys.argv[1])
if len(sys.argv) > 2:
    host = sys.argv[2]
else:
    mine = [l.split()[0] for l in open("/proc/net/if_inet6") if l.split()[5] == "eth0" and not l.startswith("fe80")][0]
    host = socket.inet_ntop(socket.AF_INET6, (int(mine, 16) - 1).to_bytes(16, "big"))
print("host6", host)
def attempt(what, fn):
    try:
        print(what, fn())
    except socket.timeout:
        print(what, "timeout")
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e)))
def host_service():
    s = socket.create_connection((host, port), timeout=20)
    data = s.recv(100)
    return "closed" if not data else "data"
attempt("hostsvc", host_service)
def udp():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.settimeout(20)
    s.connect(("2001:db8::1", 443))
    s.send(b"x")
    return s.recv(10)
attempt("udp6", udp)
)PY";

// The agent above, through the launch's embedded proxy or a running shared one (which
// takes the agent's IPv6 link over its control socket), and what each recorded.
void expect_ipv6_captured_and_decided(const Subnet& subnet, bool shared) {
  test::TempDir dir;
  Ipv6LoopbackUpstream upstream(dir.path());
  const std::uint16_t port = upstream.port();
  ASSERT_NE(port, 0) << upstream.err();
  HostIpv6Listener host_service;
  auto policy = dir.write("policy.json", ipv6_policy(port, host_service.port()));
  auto db = dir.path() / "a.db";
  HostDir host;
  std::optional<SharedProxy> proxy;
  std::vector<std::string> args{"--policy", policy.string(), "--audit-db", db.string()};
  if (shared) {
    proxy.emplace(host, policy);
    ASSERT_TRUE(proxy->ready()) << proxy->err();
    args = {"--proxy-control", proxy->socket().string(), "--name", "ipv6-shared"};
  }
  const std::string p = std::to_string(port);
  std::string host6_arg;  // one of the host's IPv6 addresses (either proxy's agent has no route of its own to one)
  for (const auto& a : host_addresses())
    if (a.find(':') != std::string::npos && host6_arg.empty()) host6_arg = a;
  if (host6_arg.empty()) GTEST_SKIP() << "the host has no IPv6 address but loopback and link-local";
  const std::string curl = std::string(kCurl) + " -sS -6 --noproxy '*' ";
  args.insert(args.end(), {"--", kSh, "-c",
                           "getent ahosts allowed.test; echo ahosts=$?; getent ahosts denied.test; echo denied=$?; " +
                               curl + "http://allowed.test:" + p + "/; echo curl=$?; " + curl +
                               "-o /dev/null -w 'unmapped=%{http_code}\\n' 'http://[2001:2::5]:" + p + "/'; " + curl +
                               "-o /dev/null -w 'ula=%{http_code}\\n' 'http://[fd00::1]/'; " + kPython + " -c \"$1\" " +
                               std::to_string(host_service.port()) + " " + host6_arg,
                           "sh", kAgentScript});
  auto r = launch(subnet, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ahosts=0"));
  EXPECT_THAT(r.out, HasSubstr("2001:2:")) << "an AAAA answer from the synthetic IPv6 pool";
  EXPECT_THAT(r.out, HasSubstr("198.18.")) << "and the A answer still";
  EXPECT_THAT(r.out, HasSubstr("denied=2"));  // getent: not found (NXDOMAIN)
  EXPECT_THAT(r.out, HasSubstr("hello over ipv6\ncurl=0")) << r.out << r.err;
  // Refused (the row below says so): a 403, or over loopback a reset that may beat curl's
  // connect() to its result.
  EXPECT_THAT(r.out, ::testing::ContainsRegex("unmapped=(403|000)"));
  EXPECT_THAT(r.out, HasSubstr("ula=403"));
  EXPECT_THAT(r.out, Not(HasSubstr("hostsvc data")));
  EXPECT_THAT(r.out, Not(HasSubstr("timeout")));
  EXPECT_THAT(r.out, HasSubstr("udp6 E")) << "UDP over IPv6 refused at once";
  EXPECT_FALSE(host_service.reached()) << "the host's IPv6 service was reached from the agent";
  if (shared) {
    EXPECT_EQ(proxy->stop(), 0) << proxy->err();
    db = proxy->store();
  }

  std::string host6;
  {
    std::istringstream out(r.out);
    std::string line;
    while (std::getline(out, line))
      if (line.starts_with("host6 ")) host6 = line.substr(6);
  }
  ASSERT_FALSE(host6.empty()) << r.out;
  const auto top = test::query(db, "SELECT kind, host, port, decision FROM requests WHERE parent_id IS NULL ORDER BY id");
  const auto has = [&](const std::vector<std::string>& row) {
    for (const auto& t : top)
      if (t == row) return true;
    return false;
  };
  EXPECT_TRUE(has({"dns", "denied.test", "53", "deny"})) << r.err;
  EXPECT_TRUE(has({"transparent", "allowed.test", p, "allow"})) << r.err;
  EXPECT_TRUE(has({"transparent", "2001:2::5", p, "deny"})) << r.err;
  EXPECT_TRUE(has({"transparent", "fd00::1", "80", "deny"})) << r.err;
  EXPECT_TRUE(has({"transparent", host6, std::to_string(host_service.port()), "deny"})) << r.err;
  if (shared) {
    // Both of the agent's addresses are the one agent the launcher registered.
    const auto agents = test::query(db, "SELECT DISTINCT agent FROM requests");
    EXPECT_EQ(agents, (std::vector<std::vector<std::string>>{{"ipv6-shared"}}));
  }
  expect_nothing_left(subnet);
}

TEST(LaunchIpv6, AllowedNamesAnswerAaaaAndIpv6ConnectionsAreCapturedAndDecided) {
  NETBOX_REQUIRE_ROOT();
  expect_ipv6_captured_and_decided(test_subnet(70), false);
}

TEST(LaunchIpv6, ASharedProxyServesTheAgentsIpv6SocketsTakenOverItsControlSocket) {
  NETBOX_REQUIRE_ROOT();
  expect_ipv6_captured_and_decided(test_subnet(72), true);
}

// With only the proxy variables the link stays IPv4: IPv6 fails at once, never by timeout.
TEST(LaunchIpv6, ProxyVarsOnlyKeepsIpv6RefusedAtOnce) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(71);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));
  const std::string script = R"PY(
import errno, socket
for addr in ["2001:db8::1", "2001:2::5"]:
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
  auto r = launch(subnet, {"--network", "proxy-vars", "--policy", policy.string(), "--audit-db",
                           (dir.path() / "a.db").string(), "--", kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("v6 2001:db8::1 ENETUNREACH"));
  EXPECT_THAT(r.out, HasSubstr("v6 2001:2::5 ENETUNREACH"));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
