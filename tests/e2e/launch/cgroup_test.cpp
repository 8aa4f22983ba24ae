// The agent's cgroup, for real (v1 on this project's CI, v2 where the machine has it):
// --memory, --pids and --cpus hold against an agent that tries to take more, an OOM kill
// is reported, and no cgroup outlives its launch on any path.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string audit_flag(const test::TempDir& dir) { return (dir.path() / "audit.db").string(); }

std::string joined(const std::vector<fs::path>& paths) {
  std::string out;
  for (const auto& p : paths) out += p.string() + "\n";
  return out;
}

std::string file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The `cgroup` object of the agents row's resource_usage, one per launch.
std::vector<nlohmann::json> cgroup_usage(const fs::path& db) {
  std::vector<nlohmann::json> out;
  for (const auto& row : query(db, "SELECT resource_usage FROM agents ORDER BY id")) {
    auto j = nlohmann::json::parse(row.at(0), nullptr, false);
    out.push_back(j.is_object() && j.contains("cgroup") ? j["cgroup"] : nlohmann::json());
  }
  return out;
}

// Touches memory 16 MiB at a time until something stops it (bytes objects are written,
// unlike a calloc'd bytearray whose pages may never be touched).
const char* kMemoryHog = "a = []\nwhile True:\n    a.append(b'x' * (16 << 20))\n";

// The agent's processes are the OOM killer's first choice (never the namespace's init,
// whose death would end the whole agent), and the agent can never make itself less
// killable than the host's processes (below 0; where the launcher has CAP_SYS_RESOURCE,
// not below 1000 either).
TEST(LaunchCgroup, TheAgentIsTheOomKillersFirstChoiceAndCannotHideBelowTheHost) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(60);
  test::TempDir dir;
  auto policy = dir.write("policy.json", R"({"version": 1})");
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", audit_flag(dir), "--", kSh, "-c",
                           "cat /proc/self/oom_score_adj; echo -1 > /proc/self/oom_score_adj && echo lowered"});
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "1000") << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("lowered"))) << r.out;
}

// The agent starts in the init's memory (start_agent) and sets its oom_score_adj there;
// the kernel spreads a score to every process sharing the memory, except from a vfork
// child. The init (the launcher's child) must not become the OOM killer's first choice
// beside the agent.
TEST(LaunchCgroup, TheInitIsNotLeftAsKillableAsTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(60);
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       audit_flag(dir), "--", kSh, "-c", "cat /proc/self/oom_score_adj; exec sleep 60"},
                      dir.path(), "agent");
  ASSERT_TRUE(eventually([&] { return launcher.out().find('\n') != std::string::npos; })) << launcher.err();
  EXPECT_EQ(launcher.out(), "1000\n");
  auto init = test::run({"pgrep", "-P", std::to_string(launcher.pid())});
  ASSERT_EQ(init.exit_code, 0);
  std::ifstream score("/proc/" + init.out.substr(0, init.out.find('\n')) + "/oom_score_adj");
  std::ifstream own("/proc/self/oom_score_adj");
  std::string init_score, launcher_score;
  score >> init_score;
  own >> launcher_score;  // the test's, which the launcher and so its init inherited
  EXPECT_EQ(init_score, launcher_score);
  ::kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait(), 143);
}

TEST(LaunchCgroup, AMemoryHogIsOomKilledWith137TheRowSaysSoAndTheProxyCarriesOn) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(60);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  auto hog = launch(subnet, {"--policy", policy.string(), "--audit-db", audit_flag(dir), "--memory", "128M", "--",
                             kPython, "-c", kMemoryHog});
  EXPECT_EQ(hog.exit_code, 137) << hog.err;
  EXPECT_THAT(hog.err, HasSubstr("netbox launch: the agent was killed for running out of memory (--memory 128M)"));

  // A hog among the agent's processes: it dies, the agent goes on through the proxy.
  const std::string port = std::to_string(upstream.port());
  auto survivor = launch(subnet, {"--policy", policy.string(), "--audit-db", audit_flag(dir), "--memory", "128M", "--",
                                  kSh, "-c",
                                  std::string(kPython) + " -c \"" + kMemoryHog + "\"; echo hog=$?; " + kCurl +
                                      " -sS http://allowed.test:" + port + "/after-oom"});
  EXPECT_EQ(survivor.exit_code, 0) << survivor.err;
  EXPECT_THAT(survivor.out, HasSubstr("hog=137"));
  EXPECT_THAT(survivor.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(survivor.err, HasSubstr("killed for running out of memory (--memory 128M)"));

  auto usage = cgroup_usage(dir.path() / "audit.db");
  ASSERT_EQ(usage.size(), 2u);
  for (const auto& u : usage) {
    ASSERT_TRUE(u.is_object()) << "no cgroup usage in resource_usage";
    EXPECT_GE(u.value("oom_kill", 0), 1) << u.dump();
    EXPECT_LE(u.value("memory_peak_bytes", 0ULL), 128ULL << 20) << u.dump();
    EXPECT_GT(u.value("memory_peak_bytes", 0ULL), 64ULL << 20) << u.dump();
    EXPECT_TRUE(u.contains("cpu_usage_ms")) << u.dump();
  }
  auto rows = query(dir.path() / "audit.db", "SELECT exit_status FROM agents ORDER BY id");
  EXPECT_EQ(rows.at(0).at(0), "137");
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

TEST(LaunchCgroup, AForkLoopIsContainedByPids) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(107);
  test::TempDir dir;
  // Children that would outlive the agent by far if nothing cleaned up.
  const std::string agent = "import errno, os, time\n"
                            "kids, err = 0, None\n"
                            "for i in range(300):\n"
                            "    try:\n"
                            "        pid = os.fork()\n"
                            "    except OSError as e:\n"
                            "        err = e.errno\n"
                            "        break\n"
                            "    if pid == 0:\n"
                            "        time.sleep(120)\n"
                            "        os._exit(0)\n"
                            "    kids += 1\n"
                            "print('forked', kids, errno.errorcode.get(err), flush=True)\n";
  auto r = launch(subnet, {"--audit-db", audit_flag(dir), "--pids", "64", "--", kPython, "-c", agent});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("EAGAIN"));
  int kids = 1000;
  std::istringstream(r.out.substr(r.out.find("forked") + 6)) >> kids;
  EXPECT_LT(kids, 64) << r.out;
  auto usage = cgroup_usage(dir.path() / "audit.db");
  ASSERT_EQ(usage.size(), 1u);
  if (usage[0].contains("pids_peak")) {
    EXPECT_LE(usage[0].value("pids_peak", 0), 64) << usage[0].dump();
  }
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

TEST(LaunchCgroup, CpusKeepsABusyLoopNearHalfACore) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(62);
  test::TempDir dir;
  // Three seconds of wall time spinning; the cgroup's own accounting says how much CPU
  // that got. Unlimited it is a whole core (less on a loaded machine); the bounds are loose.
  const std::string agent = "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end:\n    pass\n";
  auto r = launch(subnet, {"--audit-db", audit_flag(dir), "--cpus", "0.5", "--", kPython, "-c", agent});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto usage = cgroup_usage(dir.path() / "audit.db");
  ASSERT_EQ(usage.size(), 1u);
  ASSERT_TRUE(usage[0].contains("cpu_usage_ms")) << usage[0].dump();
  const double cores = usage[0].value("cpu_usage_ms", 0.0) / 3000.0;
  EXPECT_GT(cores, 0.2) << usage[0].dump();
  EXPECT_LT(cores, 0.8) << usage[0].dump();
  expect_no_cgroup_left(subnet);
}

TEST(LaunchCgroup, TheDefaultsCapPidsAt1024AndMemoryAtHalfTheRam) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(63);
  test::TempDir dir;
  Background agent({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", audit_flag(dir),
                    "--", kSh, "-c", "cat /proc/self/cgroup; echo ready; exec sleep 60"},
                   dir.path(), "defaults");
  ASSERT_TRUE(eventually([&] { return agent.out().find("ready") != std::string::npos; })) << agent.err();
  // The agent itself is in the cgroup (its init was moved in before forking it).
  for (const char* controller : {"memory", "pids"}) {
    std::istringstream lines(agent.out());
    bool inside = false;
    for (std::string line; std::getline(lines, line);)
      if ((line.find(std::string(":") + controller + ":") != std::string::npos || line.starts_with("0::")) &&
          line.find("/netbox-" + subnet.veth_prefix) != std::string::npos)
        inside = true;
    EXPECT_TRUE(inside) << controller << "\n" << agent.out();
  }
  const auto dirs = agent_cgroups(subnet);
  const std::uint64_t half = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                             static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 2 / (1 << 20) * (1 << 20);
  bool saw_pids = false, saw_memory = false;
  for (const auto& d : dirs) {
    if (fs::exists(d / "pids.max")) {
      EXPECT_EQ(file(d / "pids.max"), "1024\n") << d;
      saw_pids = true;
    }
    if (fs::exists(d / "memory.limit_in_bytes")) {  // v1
      EXPECT_EQ(file(d / "memory.limit_in_bytes"), std::to_string(half) + "\n") << d;
      saw_memory = true;
    }
    if (fs::exists(d / "memory.max")) {  // v2
      EXPECT_EQ(file(d / "memory.max"), std::to_string(half) + "\n") << d;
      saw_memory = true;
    }
  }
  EXPECT_TRUE(saw_pids) << joined(dirs);
  EXPECT_TRUE(saw_memory) << joined(dirs);
  ::kill(agent.pid(), SIGTERM);
  EXPECT_EQ(agent.wait(), 143) << agent.err();
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

TEST(LaunchCgroup, NoCgroupIsLeftAfterANormalExitATimeoutOrAFailedStart) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(64);
  test::TempDir dir;
  // A background process the agent leaves behind is killed with its cgroup.
  auto normal = launch(subnet, {"--audit-db", audit_flag(dir), "--", kSh, "-c", "sleep 60 & echo started"});
  EXPECT_EQ(normal.exit_code, 0) << normal.err;
  expect_no_cgroup_left(subnet);
  auto timeout = launch(subnet, {"--audit-db", audit_flag(dir), "--timeout", "1", "--", "sleep", "60"});
  EXPECT_EQ(timeout.exit_code, 124) << timeout.err;
  expect_no_cgroup_left(subnet);
  auto missing = launch(subnet, {"--audit-db", audit_flag(dir), "--", "/no/such/command"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

TEST(LaunchCgroup, GcRemovesTheCgroupOfAKilledLauncher) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(65);
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       audit_flag(dir), "--memory", "256M", "--", kSh, "-c", "echo ready; exec sleep 60"},
                      dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  ASSERT_FALSE(agent_cgroups(subnet).empty());
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  // The agent dies with its launcher (parent-death signal on its init); its cgroups stay.
  EXPECT_FALSE(agent_cgroups(subnet).empty());
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

// A launcher killed between writing its cgroup record and renaming it into place leaves
// `.NAME.partial`; gc removes it once its writer is gone, and never a live writer's.
TEST(LaunchCgroup, GcRemovesAHalfWrittenRecordOfADeadLauncherAndKeepsALiveOnes) {
  NETBOX_REQUIRE_ROOT();
  const fs::path records = "/run/netbox/cgroups";
  fs::create_directories(records);
  auto start_time = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    return std::stoull(field);
  };
  const std::string tag = std::to_string(::getpid());
  const fs::path dead = records / (".netbox-nbx-gctest-dead-" + tag + ".partial");
  const fs::path live = records / (".netbox-nbx-gctest-live-" + tag + ".partial");
  // Dead: this process's pid with a start time it never had.
  std::ofstream(dead) << nlohmann::json{{"pid", ::getpid()}, {"start_time", start_time(::getpid()) + 1},
                                        {"version", "v1"}, {"dirs", nlohmann::json::array()}}
                             .dump();
  std::ofstream(live) << nlohmann::json{{"pid", ::getpid()}, {"start_time", start_time(::getpid())},
                                        {"version", "v1"}, {"dirs", nlohmann::json::array()}}
                             .dump();
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  fs::remove(live);
}

TEST(LaunchCgroup, AControllerThatIsMissingStopsTheLaunchWith125UnlessDegradingIsAccepted) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(66);
  test::TempDir dir;
  // A launcher that sees no pids hierarchy (unmounted in a mount namespace of its own;
  // the host keeps its mount).
  auto without_pids = [&](const std::vector<std::string>& flags) {
    std::string cmd = "umount /sys/fs/cgroup/pids && exec " + test::netbox_binary().string() + " launch --subnet " +
                      subnet.cidr + " --audit-db " + audit_flag(dir);
    for (const auto& f : flags) cmd += " " + f;
    cmd += " -- /bin/echo agent-ran";
    return test::run({"unshare", "--mount", "--propagation", "private", kSh, "-c", cmd});
  };
  if (!fs::exists("/sys/fs/cgroup/pids/pids.max") && !fs::exists("/sys/fs/cgroup/pids/cgroup.procs"))
    GTEST_SKIP() << "no cgroup v1 pids hierarchy at /sys/fs/cgroup/pids to take away";
  auto refused = without_pids({"--pids", "64"});
  EXPECT_EQ(refused.exit_code, 125) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("--pids 64"));
  EXPECT_THAT(refused.err, HasSubstr("--allow-degraded cgroup"));
  EXPECT_THAT(refused.out, Not(HasSubstr("agent-ran")));
  auto accepted = without_pids({"--pids", "64", "--allow-degraded", "cgroup"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_THAT(accepted.out, HasSubstr("agent-ran"));
  EXPECT_THAT(accepted.err, HasSubstr("warning: --pids 64"));
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

TEST(LaunchCgroup, BadLimitsAreRefusedWithExit2NamingTheFlag) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(67);
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--memory", "lots"}, {"--memory", "1k"}, {"--cpus", "0"}, {"--cpus", "half"}, {"--pids", "-1"},
           {"--pids", "0"}}) {
    auto r = launch(subnet, {flag, value, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << flag << " " << value << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(flag + " '" + value + "'"));
  }
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
