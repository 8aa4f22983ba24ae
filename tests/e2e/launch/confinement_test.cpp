// What a confined agent can and cannot do, checked from inside a real launch.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchConfinement, AllowedUrlGoesThroughTheProxyAndDeniedOneIsRefusedWithTheReason) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(1);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  auto db = dir.path() / "audit.db";
  const std::string port = std::to_string(upstream.port());
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--name", "fetcher", "--",
                           kSh, "-c",
                           std::string(kCurl) + " -sS http://allowed.test:" + port + "/hello; echo; " + kCurl +
                               " -sS -D - -o /dev/null http://denied.test:" + port + "/secret"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(r.out, HasSubstr("403"));
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Decision: deny"));
  EXPECT_THAT(r.out, HasSubstr("denied.test"));

  auto rows = query(db, "SELECT agent, host, decision FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"fetcher", "allowed.test", "allow"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"fetcher", "denied.test", "deny"}));
  auto agents = query(db, "SELECT name, address, exit_status, command_line, policy_digest, ended FROM agents");
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0][0], "fetcher");
  EXPECT_EQ(agents[0][1], "") << "an agent on sockets has no address";
  EXPECT_EQ(agents[0][2], "0");
  EXPECT_THAT(agents[0][3], HasSubstr("curl"));
  EXPECT_EQ(agents[0][4].size(), 64u) << "policy digest";
  EXPECT_FALSE(agents[0][5].empty()) << "end time";
  expect_nothing_left(subnet);
}

TEST(LaunchConfinement, EverythingButTheProxyFailsAtOnce) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(2);
  HttpServer upstream;                // on 127.0.0.1
  HttpServer host_service("0.0.0.0");  // another host service, on every address
  UdpSink udp;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const std::string script = R"(
import errno, os, socket, sys
host = os.environ["HTTP_PROXY"].split("//")[1].split(":")[0]
def tcp(label, addr, port):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect((addr, port))
        print(label, "connected")
    except OSError as e:
        print(label, "failed", errno.errorcode.get(e.errno, str(e)))
def udp(label, addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (addr, port))
        s.recv(512)
        print(label, "answered")
    except OSError as e:
        print(label, "failed", errno.errorcode.get(e.errno, str(e)))
tcp("tcp-loopback", "127.0.0.1", int(sys.argv[1]))
tcp("tcp-host-veth", host, int(sys.argv[2]))
udp("udp-host-53", host, 53)
udp("udp-host-sink", host, int(sys.argv[3]))
)";
  // Only the proxy variables: the DNS view (port 53 on the host side) is dns_view_test's.
  auto r = launch(subnet, {"--network", "proxy-vars", "--policy", policy.string(), "--audit-db",
                           (dir.path() / "a.db").string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS --noproxy '*' http://127.0.0.1:" + std::to_string(upstream.port()) +
                               "/; echo curl-noproxy=$?; " + kPython + " -c '" + script + "' " +
                               std::to_string(upstream.port()) + " " + std::to_string(host_service.port()) + " " +
                               std::to_string(udp.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("curl-noproxy=7"));
  EXPECT_THAT(r.out, HasSubstr("tcp-loopback failed ECONNREFUSED"));
  EXPECT_THAT(r.out, HasSubstr("tcp-host-veth failed ECONNREFUSED"));
  EXPECT_THAT(r.out, HasSubstr("udp-host-53 failed"));
  EXPECT_THAT(r.out, HasSubstr("udp-host-sink failed"));
  EXPECT_THAT(r.out, Not(HasSubstr("connected")));
  EXPECT_THAT(r.out, Not(HasSubstr("answered")));
  EXPECT_EQ(upstream.connections(), 0);
  EXPECT_EQ(host_service.connections(), 0);
  EXPECT_EQ(udp.packets(), 0);
  expect_nothing_left(subnet);
}

#if defined(__x86_64__)
TEST(LaunchConfinement, EscapeSyscallsFailWithEperm) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(3);
  test::TempDir dir;
  // x86_64 syscall numbers; namespace flags that an unprivileged user could use
  // (CLONE_NEWUSER) show that seccomp, not only missing capabilities, refuses them.
  const std::string script = R"(
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(name, nr, *args):
    r = libc.syscall(nr, *args)
    if r == 0 and name.startswith("clone"):
        os._exit(0)
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
buf = ctypes.create_string_buffer(256)
sc("unshare-user", 272, 0x10000000)
sc("unshare-net", 272, 0x40000000)
sc("setns", 308, 0, 0)
sc("mount", 165, b"none", b"/tmp", b"tmpfs", 0, None)
sc("ptrace", 101, 0, 0, 0, 0)
sc("io_uring_setup", 425, 8, buf)
sc("bpf", 321, 0, buf, 64)
sc("userfaultfd", 323, 0)
sc("keyctl", 250, 0, 0)
sc("clone-newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
sc("clone3", 435, buf, 88)
sc("tiocsti", 16, 0, 0x5412, buf)
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    print("af_packet ok")
except OSError as e:
    print("af_packet", errno.errorcode.get(e.errno, "?"))
)";
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--", kSh, "-c",
                           std::string(kPython) + " -c '" + script + "'; unshare -n true; ip link add nbxprobe type dummy"});
  for (const char* name : {"unshare-user", "unshare-net", "setns", "mount", "ptrace", "io_uring_setup", "bpf",
                           "userfaultfd", "keyctl", "clone-newuser", "tiocsti"})
    EXPECT_THAT(r.out, HasSubstr(std::string(name) + " EPERM\n")) << name << "\n" << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("af_packet EAFNOSUPPORT\n"));  // seccomp_attack_test.cpp has the rest
  EXPECT_THAT(r.out, HasSubstr("clone3 ENOSYS\n"));
  EXPECT_THAT(r.err, HasSubstr("unshare failed: Operation not permitted"));
  EXPECT_THAT(r.err, HasSubstr("Operation not permitted"));
  EXPECT_EQ(test::run({"ip", "link", "show", "nbxprobe"}).exit_code, 1);
  expect_nothing_left(subnet);
}
#endif

TEST(LaunchConfinement, ForkBombIsHeldByTheProcessLimit) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(4);
  test::TempDir dir;
  // Bounded on purpose: at most 200 forks, all killed at the end.
  const std::string script = R"(
import os, time
pids, refused = [], 0
for i in range(200):
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
print("forked", len(pids), "refused", refused)
for p in pids:
    os.kill(p, 9)
for p in pids:
    os.waitpid(p, 0)
)";
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--rlimit-nproc", "20", "--", kPython, "-c",
                           script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int forked = -1, refused = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "forked %d refused %d", &forked, &refused), 2) << r.out;
  EXPECT_LT(forked, 20);
  EXPECT_GT(refused, 150);
  expect_nothing_left(subnet);
}

TEST(LaunchConfinement, MemoryHogIsHeldByTheAddressSpaceLimit) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(5);
  test::TempDir dir;
  const std::string script = R"(
try:
    hog = bytearray(2 * 1024 * 1024 * 1024)
    print("allocated", len(hog))
except MemoryError:
    print("held")
)";
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--rlimit-as", "512M", "--", kPython, "-c",
                           script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("held"));
  expect_nothing_left(subnet);
}

TEST(LaunchConfinement, SecretsInTheLaunchersEnvironmentStayBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(6);
  test::TempDir dir;
  auto r = test::run({"env", "AWS_SECRET_ACCESS_KEY=aws-sekrit", "GITHUB_TOKEN=gh-sekrit", "OPENAI_API_KEY=oa-sekrit",
                      "KEPT_ON_PURPOSE=kept", test::netbox_binary().string(), "launch", "--subnet", subnet.cidr,
                      "--audit-db", (dir.path() / "a.db").string(), "--keep-env", "KEPT_ON_PURPOSE", "--env",
                      "EXTRA=set-by-flag", "--", "/usr/bin/env"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("sekrit")));
  EXPECT_THAT(r.out, HasSubstr("KEPT_ON_PURPOSE=kept\n"));
  EXPECT_THAT(r.out, HasSubstr("EXTRA=set-by-flag\n"));
  EXPECT_THAT(r.out, HasSubstr("USER=netbox-agent\n"));  // a uid of the launch's own (own_uid_test.cpp)
  EXPECT_THAT(r.out, HasSubstr("NO_PROXY=localhost,127.0.0.1\n"));
  EXPECT_THAT(r.out, HasSubstr("no_proxy=localhost,127.0.0.1\n"));
  EXPECT_THAT(r.out, HasSubstr("NODE_USE_ENV_PROXY=1\n"));
  // The embedded proxy's sockets in the agent's namespace (agent_link.hpp).
  for (const char* key : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
    EXPECT_THAT(r.out, HasSubstr(std::string(key) + "=http://127.0.0.1:3128\n")) << key;
  for (const char* key : {"ALL_PROXY", "all_proxy"})  // the SOCKS5 listener (socks_test.cpp)
    EXPECT_THAT(r.out, HasSubstr(std::string(key) + "=socks5h://127.0.0.1:1080\n")) << key;
  expect_nothing_left(subnet);
}

TEST(LaunchConfinement, AgentHasItsOwnPidNamespaceProcAndEmptyRunAndTmp) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(7);
  test::TempDir dir;
  // A workdir of its own outside /tmp: a checkout under /tmp would put the default one
  // (the current directory) inside the agent's fresh /tmp.
  HostDir host;
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--workdir", host.folder("work").string(),
                           "--", kSh, "-c",
                           "echo pid=$$; echo tmp=$(ls -A /tmp | wc -l) run=$(ls -A /run | wc -l); "
                           "test -e /run/netbox && echo host-run-visible; id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' "
                           "/proc/self/status; ulimit -c"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pid=2\n"));  // PID 1 is the launcher's small init
  EXPECT_THAT(r.out, HasSubstr("tmp=0 run=0\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("host-run-visible")));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n2000[0-9]{6}\n"));  // the launch's own uid
  EXPECT_THAT(r.out, HasSubstr("CapEff:\t0000000000000000"));
  EXPECT_THAT(r.out, HasSubstr("CapBnd:\t0000000000000000"));
  EXPECT_THAT(r.out, HasSubstr("NoNewPrivs:\t1"));
  EXPECT_THAT(r.out, HasSubstr("Seccomp:\t2"));
  EXPECT_THAT(r.out, HasSubstr("\n0\n"));  // core size
  expect_nothing_left(subnet);
}

TEST(LaunchConfinement, SeccompProfileFileInDockerFormatIsApplied) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(8);
  test::TempDir dir;
  auto profile = dir.write("profile.json", R"({
  "defaultAction": "SCMP_ACT_ALLOW",
  "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
  "syscalls": [
    {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
    {"names": ["reboot"], "action": "SCMP_ACT_ERRNO", "includes": {"caps": ["CAP_SYS_BOOT"]}}
  ]
})");
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--seccomp", profile.string(), "--", kSh,
                           "-c", "mkdir /tmp/x; echo rc=$?; touch /tmp/y && echo touched"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Operation not permitted"));
  EXPECT_THAT(r.out, HasSubstr("rc=1"));
  EXPECT_THAT(r.out, HasSubstr("touched"));

  auto bad = dir.write("bad.json", R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOPE"}]})");
  auto b = launch(subnet, {"--seccomp", bad.string(), "--", "true"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_THAT(b.err, HasSubstr("bad.json"));
  EXPECT_THAT(b.err, HasSubstr("syscalls[0].action"));
  EXPECT_THAT(b.err, HasSubstr("SCMP_ACT_NOPE"));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test

namespace netbox::launch_test {
namespace {

// The host's own table is a second wall: with the namespace's rules removed (as root,
// from outside; the agent itself cannot), other host services are still unreachable.
// The embedded proxy's agent has no device leading out (agent_link.hpp): with its own rules
// gone, a host address is still nothing but an address of its own namespace.
TEST(LaunchConfinement, NothingLeadsOutEvenWithoutTheAgentsOwnRules) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(9);
  HttpServer host_service("0.0.0.0");
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       (dir.path() / "a.db").string(), "--", kSh, "-c", "echo proxy=$HTTP_PROXY; exec sleep 60"},
                      dir.path(), "agent");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("proxy=") != std::string::npos; })) << launcher.err();
  const auto addresses = host_addresses();
  ASSERT_FALSE(addresses.empty()) << "the host has no address but loopback";
  const std::string host = addresses.front();
  auto init = test::run({"pgrep", "-P", std::to_string(launcher.pid())});
  ASSERT_EQ(init.exit_code, 0);
  const std::string ns_pid = init.out.substr(0, init.out.find('\n'));

  ASSERT_EQ(test::run({"nsenter", "-t", ns_pid, "-n", "nft", "delete", "table", "inet", "netbox"}).exit_code, 0);
  // No capture either now: the host's address is the namespace's own (local default route),
  // where nothing listens.
  const std::string probe = "import socket, sys\ns = socket.socket()\ns.settimeout(10)\n"
                            "try:\n    s.connect((sys.argv[1], int(sys.argv[2])))\n"
                            "    print('connected' if s.recv(1) else 'failed: closed')\n"
                            "except OSError as e:\n    print('failed', e)\n";
  auto r = test::run({"nsenter", "-t", ns_pid, "-n", kPython, "-c", probe, host, std::to_string(host_service.port())});
  EXPECT_THAT(r.out, HasSubstr("failed")) << r.err;
  EXPECT_EQ(host_service.connections(), 0);

  ::kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait(), 143);
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test

namespace netbox::launch_test {
namespace {

// The rules the launcher builds as netlink messages (launcher/src/nft_rules.cpp) read back,
// through nft itself, as the ruleset docs/launch.md describes: the capture of every TCP
// destination but loopback, DNS to the view, loopback-only output, the rest refused at once.
// A wrong byte order, offset or register would read back as another rule (or not at all).
std::string ruleset_of_agent(const std::vector<std::string>& flags, const test::TempDir& dir, std::string* capture) {
  std::vector<std::string> argv = {test::netbox_binary().string(), "launch", "--subnet", test_subnet(-1).cidr,
                                   "--audit-db", (dir.path() / "a.db").string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* a : {"--", kSh, "-c", "echo started; exec sleep 60"}) argv.emplace_back(a);
  Background launcher(argv, dir.path(), "agent");
  if (!eventually([&] { return launcher.out().find("started") != std::string::npos; })) return "not started: " + launcher.err();
  auto init = test::run({"pgrep", "-P", std::to_string(launcher.pid())});
  const std::string ns_pid = init.out.substr(0, init.out.find('\n'));
  auto rules = test::run({"nsenter", "-t", ns_pid, "-n", "nft", "list", "ruleset"});
  if (capture) {
    auto listening = test::run({"nsenter", "-t", ns_pid, "-n", "ss", "-Htln"});
    *capture = listening.out;
  }
  ::kill(launcher.pid(), SIGTERM);
  launcher.wait();
  return rules.out;
}

std::string squeezed(const std::string& text) {
  std::string out;
  bool blank = true;
  for (char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n';
    if (space && !blank) out += ' ';
    if (!space) out += c;
    blank = space;
  }
  return out;
}

TEST(LaunchConfinement, TheAgentsRulesReadBackAsDocumented) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  std::string listening;
  const std::string rules = squeezed(ruleset_of_agent({}, dir, &listening));
  // The capture port is the one redirect names; it must be a socket listening in there.
  const std::string redirect = "meta l4proto tcp redirect to :";
  const auto at = rules.find(redirect);
  ASSERT_NE(at, std::string::npos) << rules;
  const std::string port = rules.substr(at + redirect.size(), rules.find(' ', at + redirect.size()) - at - redirect.size());
  EXPECT_THAT(listening, HasSubstr(":" + port + " ")) << "the redirect's port " << port << " is not listening";
  EXPECT_EQ(rules,
            "table inet netbox { chain capture { type nat hook output priority -100; policy accept; "
            "ip daddr 127.0.0.0/8 return ip6 daddr ::1 return "
            "meta nfproto ipv4 tcp dport 53 dnat ip to 127.0.0.53:53 "
            "meta nfproto ipv4 udp dport 53 dnat ip to 127.0.0.53:53 "
            "meta l4proto tcp redirect to :" + port + " } "
            "chain output { type filter hook output priority filter; policy drop; "
            "ip daddr 127.0.0.0/8 accept ip6 daddr ::1 accept ct direction reply accept "
            "meta l4proto tcp reject with tcp reset reject with icmpx admin-prohibited } } ");

  // Without the capture only the output chain is there.
  test::TempDir dir2;
  EXPECT_EQ(squeezed(ruleset_of_agent({"--network", "proxy-vars"}, dir2, nullptr)),
            "table inet netbox { chain output { type filter hook output priority filter; policy drop; "
            "ip daddr 127.0.0.0/8 accept ip6 daddr ::1 accept ct direction reply accept "
            "meta l4proto tcp reject with tcp reset reject with icmpx admin-prohibited } } ");
}

}  // namespace
}  // namespace netbox::launch_test
