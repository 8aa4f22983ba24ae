// The launcher's contract: exit statuses, signals, --timeout, errors, clean-up and gc,
// and many agents at once through a running proxy.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string audit_flag(const test::TempDir& dir) { return (dir.path() / "audit.db").string(); }

TEST(LaunchLifecycle, ExitStatusAndDeathBySignalPropagate) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(10);
  test::TempDir dir;
  EXPECT_EQ(launch(subnet, {"--audit-db", audit_flag(dir), "--", kSh, "-c", "exit 3"}).exit_code, 3);
  EXPECT_EQ(launch(subnet, {"--audit-db", audit_flag(dir), "--", kSh, "-c", "kill -TERM $$"}).exit_code, 143);
  auto rows = query(dir.path() / "audit.db", "SELECT exit_status, resource_usage FROM agents ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "3");
  EXPECT_EQ(rows[1][0], "143");
  EXPECT_THAT(rows[0][1], HasSubstr("max_rss_kb"));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, StdinAndTheTerminalPassThrough) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(21);
  test::TempDir dir;
  auto piped = test::run({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                          audit_flag(dir), "--", "/bin/cat"},
                         std::chrono::seconds(60), "line one\nline two\n");
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "line one\nline two\n");

  // Under a pseudo-terminal: the agent sees a terminal, and one ^C reaches it once.
  const std::string agent = "import os, signal, sys, time\n"
                            "n = 0\n"
                            "def h(s, f):\n    global n\n    n += 1\n"
                            "signal.signal(signal.SIGINT, h)\n"
                            "print('tty', os.isatty(0) and os.isatty(1), flush=True)\n"
                            "print('ready', flush=True)\n"
                            "time.sleep(2)\n"
                            "print('sigints', n, flush=True)\n";
  const std::string driver = R"(
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
buf, sent, end = b"", False, time.time() + 30
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
    if b"ready" in buf and not sent:
        os.write(fd, b"\x03")
        sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
print("exit", os.waitstatus_to_exitcode(st))
)";
  auto r = test::run({kPython, "-c", driver, test::netbox_binary().string(), "launch", "--subnet", subnet.cidr,
                      "--audit-db", audit_flag(dir), "--", kPython, "-c", agent});
  EXPECT_THAT(r.out, HasSubstr("tty True"));
  EXPECT_THAT(r.out, HasSubstr("sigints 1"));
  EXPECT_THAT(r.out, HasSubstr("exit 0"));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, CommandNotFoundIs127AndNotExecutableIs126) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(11);
  test::TempDir dir;
  auto missing = launch(subnet, {"--audit-db", audit_flag(dir), "--", "no-such-command-netbox"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_THAT(missing.err, HasSubstr("no-such-command-netbox: command not found"));
  auto not_exec = launch(subnet, {"--audit-db", audit_flag(dir), "--", "/etc/passwd"});
  EXPECT_EQ(not_exec.exit_code, 126);
  EXPECT_THAT(not_exec.err, HasSubstr("/etc/passwd: cannot execute"));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, SignalsToTheLauncherAreForwardedToTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(12);
  test::TempDir dir;
  {
    Background agent({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                      "--", kSh, "-c", "trap 'exit 42' USR1; echo ready; while :; do sleep 0.1; done"},
                     dir.path(), "usr1");
    ASSERT_TRUE(eventually([&] { return agent.out().find("ready") != std::string::npos; })) << agent.err();
    ::kill(agent.pid(), SIGUSR1);
    EXPECT_EQ(agent.wait(), 42) << agent.err();
  }
  {
    Background agent({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                      "--", kSh, "-c", "echo ready; exec sleep 60"},
                     dir.path(), "term");
    ASSERT_TRUE(eventually([&] { return agent.out().find("ready") != std::string::npos; })) << agent.err();
    ::kill(agent.pid(), SIGTERM);
    EXPECT_EQ(agent.wait(), 143) << agent.err();
  }
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, TimeoutTerminatesThenKills) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(13);
  test::TempDir dir;
  auto polite = launch(subnet, {"--audit-db", audit_flag(dir), "--timeout", "1s", "--", "sleep", "60"});
  EXPECT_EQ(polite.exit_code, 124) << "--timeout ends a launch with 124, as timeout(1) does";
  EXPECT_THAT(polite.err, HasSubstr("--timeout reached: sending SIGTERM"));
  auto stubborn = launch(subnet, {"--audit-db", audit_flag(dir), "--timeout", "1000ms", "--kill-grace", "1", "--", kSh, "-c",
                                  "trap '' TERM; while :; do sleep 0.1; done"});
  EXPECT_EQ(stubborn.exit_code, 124);
  EXPECT_THAT(stubborn.err, HasSubstr("sending SIGKILL"));
  // The agents row still says how each ended: SIGTERM, then SIGKILL.
  EXPECT_EQ(query(audit_flag(dir), "SELECT exit_status FROM agents ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"143"}, {"137"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, BadInputIsRefusedWithExit2NamingIt) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(14);
  test::TempDir dir;
  auto user = launch(subnet, {"--user", "no-such-user-netbox", "--", "true"});
  EXPECT_EQ(user.exit_code, 2);
  EXPECT_THAT(user.err, HasSubstr("--user 'no-such-user-netbox': no such user"));

  auto bad_policy = dir.write("broken-policy.json", R"({"version": 1, "allow": ["*"]})");
  auto policy = launch(subnet, {"--policy", bad_policy.string(), "--", "true"});
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_THAT(policy.err, HasSubstr("broken-policy.json"));

  auto subnet_flag = test::run_netbox({"launch", "--subnet", "10.213.0.1/16", "--", "true"});
  EXPECT_EQ(subnet_flag.exit_code, 2);
  EXPECT_THAT(subnet_flag.err, HasSubstr("--subnet '10.213.0.1/16'"));

  auto rlimit = launch(subnet, {"--rlimit-as", "lots", "--", "true"});
  EXPECT_EQ(rlimit.exit_code, 2);
  EXPECT_THAT(rlimit.err, HasSubstr("--rlimit-as 'lots'"));

  for (const char* flag : {"--timeout", "--kill-grace"}) {
    auto duration = launch(subnet, {flag, "1y", "--", "true"});
    EXPECT_EQ(duration.exit_code, 2) << flag;
    EXPECT_THAT(duration.err, HasSubstr(std::string(flag) + ": '1y' is not a duration"));
  }

  auto env = launch(subnet, {"--env", "NOEQUALS", "--", "true"});
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_THAT(env.err, HasSubstr("--env 'NOEQUALS'"));

  // A server address is not a file the launcher can hide or make: refused, naming the
  // way that works, and never echoing a password the address may hold.
  auto pg = test::run_netbox({"launch", "--audit-db", "postgresql://netbox:hunter2@127.0.0.1:1/audit", "--", "true"});
  EXPECT_EQ(pg.exit_code, 2);
  EXPECT_THAT(pg.err, HasSubstr("--audit-db postgresql://..."));
  EXPECT_THAT(pg.err, HasSubstr("--proxy-control"));
  EXPECT_THAT(pg.err, Not(HasSubstr("hunter2")));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, MissingCapabilityIsNamed) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(15);
  auto r = test::run({"setpriv", "--bounding-set", "-net_admin", "--", test::netbox_binary().string(), "launch",
                      "--subnet", subnet.cidr, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("not enough privilege"));
  EXPECT_THAT(r.err, HasSubstr("CAP_NET_ADMIN"));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, ExhaustedPoolIsReported) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(16);
  const std::string one_slot = subnet.addr_prefix + "0/30";
  test::TempDir dir;
  Background holder({test::netbox_binary().string(), "launch", "--subnet", one_slot, "--audit-db", audit_flag(dir),
                     "--", kSh, "-c", "echo ready; exec sleep 60"},
                    dir.path(), "holder");
  ASSERT_TRUE(eventually([&] { return holder.out().find("ready") != std::string::npos; })) << holder.err();
  auto r = test::run_netbox({"launch", "--subnet", one_slot, "--audit-db", audit_flag(dir), "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("subnet pool " + one_slot + " is exhausted"));
  ::kill(holder.pid(), SIGTERM);
  EXPECT_EQ(holder.wait(), 143);
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, GcRemovesWhatAKilledLauncherLeftBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(17);
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                       "--", kSh, "-c", "echo ready; exec sleep 60"},
                      dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  ASSERT_TRUE(lease_exists(subnet));
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  // The namespace dies with its launcher (parent-death signal on its init; the embedded
  // proxy and its sockets were the launcher's), while the lease and the cgroup stay until
  // gc (unless a parallel launch's own gc got there first).
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  expect_nothing_left(subnet);
}

// Launched agents no longer get a veth or a host table, but a launcher of an older netbox,
// killed, left both with its lease: gc still removes them (its lease names the veth; the
// table is named for it), and a second copy of each that no lease names at all.
TEST(LaunchLifecycle, GcStillRemovesTheVethAndHostTableAnOlderLauncherLeft) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(113);
  const std::string leased = subnet.veth_prefix + "00", orphan = subnet.veth_prefix + "04";
  // A launcher that is gone: a pid that exited, its start time no process has.
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  fs::create_directories("/run/netbox/leases");
  std::ofstream(fs::path("/run/netbox/leases") / (subnet.addr_prefix + "0"))
      << R"({"pid": )" << dead << R"(, "start_time": 1, "veth": ")" << leased << R"(", "host": ")" << subnet.addr_prefix
      << R"(1", "agent": ")" << subnet.addr_prefix << R"(2"})" << "\n";
  for (const auto& name : {leased, orphan}) {
    // A veth as those launchers made (its peer, named like no netbox veth, goes with it).
    ASSERT_EQ(test::run({"ip", "link", "add", name, "type", "veth", "peer", "name", "p" + name.substr(3)}).exit_code, 0)
        << name;
    ASSERT_EQ(test::run({"nft", "add", "table", "inet", "netbox_" + name}).exit_code, 0) << name;
  }
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  // (A parallel launch's own collection may have got there first: then gc says nothing.)
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, TheNextLaunchCollectsWhatAKilledLauncherLeftBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(19);
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                       "--", kSh, "-c", "echo ready; exec sleep 60"},
                      dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  auto next = launch(subnet, {"--audit-db", audit_flag(dir), "--", "true"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, AProxyThatCannotBeReachedLeavesNothingBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(20);
  test::TempDir dir;
  auto r = launch(subnet, {"--proxy-control", (dir.path() / "no-proxy-here.sock").string(), "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("no-proxy-here.sock: cannot connect"));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, AnAuditStoreThatCannotBeOpenedIsNamedAndLeavesNothingBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(22);
  test::TempDir dir;
  // The embedded proxy opens its store on a thread while the agent starts; its failure
  // ends the launch with its reason, the agent killed, and everything comes down
  // (agent_starts_early_test.cpp: what the agent sent meanwhile goes nowhere).
  const auto db = dir.path() / "no-such-dir" / "audit.db";
  auto r = launch(subnet, {"--audit-db", db.string(), "--", kSh, "-c", "echo the agent ran; exec sleep 600"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_THAT(r.err, HasSubstr("cannot open audit database " + db.string()));
  expect_nothing_left(subnet);
}

TEST(LaunchLifecycle, BackToBackLaunchesGetTheSameNetworkBackEachTime) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(23);
  test::TempDir dir;
  // The lease is released as the launch returns, so the next launch gets the same /30
  // (and cgroup name) at once, and must find nothing of the previous one in its way.
  for (int i = 0; i < 5; ++i) {
    auto r = launch(subnet, {"--audit-db", audit_flag(dir), "--", kSh, "-c", "exit 7"});
    ASSERT_EQ(r.exit_code, 7) << "launch " << i << ": " << r.err;
    expect_nothing_left(subnet);
  }
}

TEST(LaunchLifecycle, ANamespaceHeldOpenDoesNotHoldTheLaunchBack) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(24);
  test::TempDir dir;
  // Nothing of the launch waits for the kernel to take the namespace down: here the test
  // holds it open (it outlives the launch), and the launch still returns, with nothing
  // of its own left on the host.
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                       "--", kSh, "-c", "echo ready; sleep 1"},
                      dir.path(), "held");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  std::ifstream children("/proc/" + std::to_string(launcher.pid()) + "/task/" + std::to_string(launcher.pid()) +
                         "/children");
  pid_t init = 0;
  ASSERT_TRUE(children >> init) << "the launcher has no child";
  const std::string ns = "/proc/" + std::to_string(init) + "/ns/net";
  const int held = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0) << ns;
  EXPECT_EQ(launcher.wait(), 0) << launcher.err();
  expect_nothing_left(subnet);
  ::close(held);
}

TEST(LaunchLifecycle, FiftyAgentsAtOnceThroughARunningProxy) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(18);
  constexpr int kAgents = 50;
  HttpServer upstream("127.0.0.1", kAgents);  // answers once all 50 are waiting
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  HostDir host;
  SharedProxy proxy(host, policy, {"--threads", "2"});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto sock = proxy.socket();
  const auto db = proxy.store();

  std::vector<std::unique_ptr<Background>> agents;
  for (int i = 0; i < kAgents; ++i)
    agents.push_back(std::make_unique<Background>(
        std::vector<std::string>{test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control",
                                 sock.string(), "--name", "agent-" + std::to_string(i), "--", kSh, "-c",
                                 "echo proxy=$HTTP_PROXY; " + std::string(kCurl) +
                                     " -sS -o /dev/null -w 'status=%{http_code}\\n' http://allowed.test:" +
                                     std::to_string(upstream.port()) + "/agent-" + std::to_string(i)},
        dir.path(), "agent-" + std::to_string(i)));
  std::set<std::string> proxies;
  for (int i = 0; i < kAgents; ++i) {
    EXPECT_EQ(agents[i]->wait(), 0) << agents[i]->err();
    EXPECT_THAT(agents[i]->out(), HasSubstr("status=200")) << "agent-" << i << ": " << agents[i]->err();
    auto out = agents[i]->out();
    auto at = out.find("proxy=");
    if (at != std::string::npos) proxies.insert(out.substr(at, out.find('\n', at) - at));
  }
  // One address for all: each agent's own socket in its own namespace, which is its identity.
  EXPECT_EQ(proxies, (std::set<std::string>{"proxy=http://127.0.0.1:3128"}));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();

  auto agent_rows = query(db, "SELECT name FROM agents WHERE exit_status = 0");
  std::set<std::string> names;
  for (const auto& row : agent_rows) names.insert(row[0]);
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kAgents));
  for (int i = 0; i < kAgents; ++i) {
    const std::string name = "agent-" + std::to_string(i);
    auto rows = query(db, "SELECT agent, path, decision FROM requests WHERE path = '/" + name + "'");
    ASSERT_EQ(rows.size(), 1u) << name;
    EXPECT_EQ(rows[0][0], name) << "the request row carries the agent's name";
    EXPECT_EQ(rows[0][2], "allow");
  }
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
