// The DNS view and transparent capture with a running `netbox proxy --control` (issue 15
// item 6): programs that ignore the proxy variables resolve and connect through the shared
// proxy exactly as through an embedded one, and agents sharing it each have their own
// mappings.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <fstream>
#include <regex>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// The synthetic IPv4 and IPv6 addresses `getent ahostsv4/ahostsv6 allowed.test` printed
// (kLookup); empty if none.
const std::string kLookup = "getent ahostsv4 allowed.test | head -1; getent ahostsv6 allowed.test | head -1; ";
std::string synthetic_address(const std::string& out) {
  std::smatch m;
  static const std::regex line("(198\\.1[89]\\.[0-9]+\\.[0-9]+) +STREAM allowed\\.test");
  return std::regex_search(out, m, line) ? m[1].str() : std::string();
}
std::string synthetic_address6(const std::string& out) {
  std::smatch m;
  static const std::regex line("(2001:2:[0-9a-f:]+) +STREAM allowed\\.test");
  return std::regex_search(out, m, line) ? m[1].str() : std::string();
}

TEST(LaunchSharedTransparent, ARunningProxyAnswersDnsAndCapturesWithNoProxyVariablesUsed) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(91);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/shared";
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", "shared-a", "--", kSh, "-c",
                           "grep nameserver /etc/resolv.conf; " + kLookup + std::string(kCurl) + " -sS --noproxy '*' " + url +
                               "; echo; getent hosts denied.test; echo denied=$?"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(synthetic_address(r.out).empty()) << r.out;
  EXPECT_FALSE(synthetic_address6(r.out).empty()) << r.out;
  EXPECT_THAT(r.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(r.out, HasSubstr("denied=2"));  // getent: not found (NXDOMAIN)
  EXPECT_THAT(r.out, HasSubstr("nameserver 127.0.0.53"));  // the shared proxy's socket in the agent's namespace
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  auto rows = query(proxy.store(), "SELECT kind, host, decision, agent FROM requests ORDER BY id");
  // The captured connection's row, then its one plain-HTTP request's, then the refused name
  // (and, when getent asked twice, the row counting the repeat).
  const std::vector<std::string> refused_name{"dns", "denied.test", "deny", "shared-a"};
  if (rows.size() == 4 && rows[3] == refused_name) rows.pop_back();
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"transparent", "allowed.test", "allow", "shared-a"},
                                                          {"transparent", "allowed.test", "allow", "shared-a"},
                                                          {"dns", "denied.test", "deny", "shared-a"}}));
  expect_nothing_left(subnet);
}

// A name agent A resolved stands for nothing in agent B's view: B dialling A's synthetic
// address is decided as the literal it is (the benchmarking range, internal: refused),
// never as A's mapping, while B's own lookup of the name gets an address of its own pool.
// Their /30s (10.213.192.0 and 10.213.194.0) are 128 apart, so both launchers propose the
// same /22: B gets the next free one instead of being refused.
TEST(LaunchSharedTransparent, TwoAgentsAtOnceHaveTheirOwnMappings) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet_a = test_subnet(92);
  const auto subnet_b = test_subnet(94);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string port = std::to_string(upstream.port());
  const auto done = host.folder("flags") / "done";
  // A resolves, fetches, and stays attached (its mapping alive) until B is through.
  Background a({test::netbox_binary().string(), "launch", "--subnet", subnet_a.cidr, "--proxy-control",
                proxy.socket().string(), "--name", "agent-a", "--", kSh, "-c",
                kLookup + std::string(kCurl) + " -sS --noproxy '*' http://allowed.test:" + port +
                    "/a; echo; echo fetched; while [ ! -e " + done.string() + " ]; do sleep 0.1; done"},
               host.path(), "agent-a");
  ASSERT_TRUE(eventually([&] { return a.out().find("fetched") != std::string::npos; }, std::chrono::seconds(60)))
      << a.out() << a.err();
  const std::string a_addr = synthetic_address(a.out());
  const std::string a_addr6 = synthetic_address6(a.out());
  ASSERT_FALSE(a_addr.empty()) << a.out();
  ASSERT_FALSE(a_addr6.empty()) << a.out();
  const std::string b_curl = std::string(kCurl) + " -sS --noproxy '*' --max-time 20 ";
  auto b = launch(subnet_b, {"--proxy-control", proxy.socket().string(), "--name", "agent-b", "--", kSh, "-c",
                             b_curl + "http://" + a_addr + ":" + port + "/b; echo b_literal=$?; " + b_curl + "'http://[" +
                                 a_addr6 + "]:" + port + "/b6'; echo b_literal6=$?; " + kLookup});
  std::ofstream(done).put('\n');
  EXPECT_EQ(a.wait(), 0) << a.err();
  EXPECT_EQ(b.exit_code, 0) << b.err;
  // Refused as the internal literal it is in B's view, with the reason (plain HTTP: a 403).
  EXPECT_THAT(b.out, HasSubstr("is internal (benchmarking, 198.18.0.0/15)"));
  EXPECT_THAT(b.out, HasSubstr(a_addr6 + " is internal")) << b.out;
  EXPECT_THAT(b.out, Not(HasSubstr(HttpServer::kBody)));
  const std::string b_addr = synthetic_address(b.out);
  const std::string b_addr6 = synthetic_address6(b.out);
  ASSERT_FALSE(b_addr.empty()) << b.out;
  ASSERT_FALSE(b_addr6.empty()) << b.out;
  EXPECT_NE(b_addr, a_addr);
  EXPECT_NE(b_addr6, a_addr6) << "each agent's IPv6 pool is its own";
  // Both proposed 198.18.0.0/22 (the /22 numbered by their /30s); B was given the next.
  const auto pool_of = [&](const std::string& agent) {
    std::smatch m;
    const std::string log = proxy.err();
    const std::regex line("agent_registered agent=" + agent + " [^\\n]* dns_pool=([0-9./]+)");
    return std::regex_search(log, m, line) ? m[1].str() : std::string();
  };
  EXPECT_EQ(pool_of("agent-a"), "198.18.0.0/22") << proxy.err();
  EXPECT_EQ(pool_of("agent-b"), "198.18.4.0/22") << proxy.err();
  EXPECT_EQ(upstream.connections(), 1) << "only A's fetch reached the upstream";
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  const auto rows = query(proxy.store(), "SELECT agent, kind, host, decision FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 4u);  // A's connection and its request; B's two refused connections
  EXPECT_EQ(rows[0], (std::vector<std::string>{"agent-a", "transparent", "allowed.test", "allow"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"agent-a", "transparent", "allowed.test", "allow"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"agent-b", "transparent", a_addr, "deny"}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"agent-b", "transparent", a_addr6, "deny"}));
  expect_nothing_left(subnet_a);
  expect_nothing_left(subnet_b);
}

// A control socket that answers like a proxy from before the socket link: it takes the
// registration but names no key ("addr") the agent is attached under (and drops the
// descriptors unread). Every line it is sent is appended to the log named by argv[2].
const char* kProxyWithoutSockets = R"PY(
import json, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
while True:
    c, _ = s.accept()
    f = c.makefile("rwb")
    for line in f:
        with open(log, "a") as out:
            out.write(line.decode())
        m = json.loads(line)
        reply = {"ok": True}
        f.write((json.dumps(reply) + "\n").encode())
        f.flush()
    c.close()
)PY";

// The agent's sockets went to a proxy that does not serve them: the launch stops (exit 125,
// saying why) and first unregisters, so the proxy can close the agent's row with that
// status rather than leave it open.
TEST(LaunchSharedTransparent, AProxyThatTakesNoSocketsStopsTheLaunchWhichUnregistersFirst) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(73);
  HostDir host;
  const auto sock = host.folder("control") / "old.sock";
  const auto lines = host.path() / "lines.jsonl";
  Background old({kPython, "-c", kProxyWithoutSockets, sock.string(), lines.string()}, host.path(), "old-proxy");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(sock); })) << old.err();
  auto r = launch(subnet, {"--proxy-control", sock.string(), "--", kSh, "-c", "echo AGENT-RAN"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_THAT(r.err, HasSubstr("took the agent's sockets but named no key to unregister it (an older netbox?)"));
  EXPECT_THAT(r.out, Not(HasSubstr("AGENT-RAN")));
  std::ifstream in(lines);
  std::string line, unregister;
  while (std::getline(in, line))
    if (line.find("\"unregister\"") != std::string::npos) unregister = line;
  EXPECT_THAT(unregister, HasSubstr("\"exit_status\":125")) << "the registration was left open";
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
