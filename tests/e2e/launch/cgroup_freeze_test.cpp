// The guardian's freeze and kill switch on a real cgroup (issue 25): a counting process is
// frozen (it makes no progress), thawed (it goes on), and killed while frozen (it is gone,
// reaped with SIGKILL, and kill_all says so only then); a launcher that dies with its agent
// frozen leaves nothing `netbox gc` cannot clean.
#include "netbox/launcher/cgroup.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CgroupPlan pids_plan() {
  CgroupLimits l;
  l.pids = 64;
  l.pids_text = "64";
  return plan_cgroup(l, false, slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo"));
}

// A counter in memory shared with a child that increments it as fast as it can.
struct Counter {
  std::atomic<std::uint64_t>* n = static_cast<std::atomic<std::uint64_t>*>(
      ::mmap(nullptr, sizeof(std::atomic<std::uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ~Counter() { ::munmap(n, sizeof(*n)); }
  pid_t spawn() const {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (;;) n->fetch_add(1, std::memory_order_relaxed);
    }
    return pid;
  }
  // Waits (bounded) until the count moves past `from`.
  bool moves_past(std::uint64_t from) const {
    for (int i = 0; i < 5000; ++i) {
      if (n->load() > from) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
};

std::string unique_name(int n) { return "netbox-nbxfreeze" + std::to_string(::getpid()) + "-" + std::to_string(n); }

// The launches' own state folder: its cgroup records are what every `netbox gc` on this
// machine goes by, so a cgroup recorded anywhere else would be taken for an orphan (and its
// processes killed) by a gc that another test runs meanwhile.
const fs::path kStateDir = "/run/netbox";

TEST(CgroupFreeze, AFrozenAgentMakesNoProgressAThawedOneGoesOnAndAKilledOneIsGone) {
  const auto plan = pids_plan();
  ASSERT_NE(plan.version, CgroupVersion::none) << "no cgroup on this machine";
  Counter counter;
  std::vector<fs::path> dirs;
  {
    AgentCgroup cg(plan, unique_name(1), kStateDir);
    ASSERT_TRUE(cg.can_freeze()) << "this machine's cgroups offer no freezer";
    dirs = cg.dirs();
    const pid_t child = counter.spawn();
    ASSERT_GT(child, 0);
    cg.attach(child);
    ASSERT_TRUE(counter.moves_past(0));

    cg.freeze();
    EXPECT_TRUE(cg.frozen());
    const auto held = counter.n->load();
    std::this_thread::sleep_for(200ms);  // a running child counts millions in this time
    EXPECT_EQ(counter.n->load(), held) << "a frozen agent went on counting";

    cg.thaw();
    EXPECT_FALSE(cg.frozen());
    EXPECT_TRUE(counter.moves_past(held)) << "a thawed agent did not go on";

    cg.freeze();
    EXPECT_TRUE(cg.kill_all(2s)) << "the frozen agent was not gone within 2 s";
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  }
  for (const auto& d : dirs) EXPECT_FALSE(fs::exists(d)) << d << " left behind";
}

// A launcher killed outright while its agent is frozen: the agent's processes die only once
// thawed, and gc does that before it removes the folders.
TEST(CgroupFreeze, GcCleansTheFrozenAgentOfADeadLauncher) {
  const auto plan = pids_plan();
  ASSERT_NE(plan.version, CgroupVersion::none) << "no cgroup on this machine";
  Counter counter;
  const std::string name = unique_name(2);  // before the fork: it holds our pid
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {  // the "launcher": makes the cgroup, freezes its agent, dies without cleaning up
    auto* cg = new AgentCgroup(plan, name, kStateDir);
    const pid_t agent = counter.spawn();
    cg->attach(agent);
    cg->freeze();
    const std::string agent_text = std::to_string(agent) + "\n";
    (void)!::write(pipe_fds[1], agent_text.data(), agent_text.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char buf[32] = {};
  ASSERT_GT(::read(pipe_fds[0], buf, sizeof buf - 1), 0);
  ::close(pipe_fds[0]);
  const pid_t agent = std::stoi(buf);
  ::waitpid(launcher, nullptr, 0);
  ASSERT_EQ(::kill(agent, 0), 0) << "the frozen agent should outlive its launcher until gc";

  std::vector<std::string> removed;
  collect_cgroup_garbage(kStateDir, removed);
  int ours = 0;
  for (const auto& line : removed) ours += line.find(name) != std::string::npos;
  EXPECT_GE(ours, 1);
  for (const auto& d : plan.parents) EXPECT_FALSE(fs::exists(d.second / name)) << d.second;
  // The agent was reparented away from us; it is gone once nothing can signal it.
  bool gone = false;
  for (int i = 0; i < 2000 && !gone; ++i) {
    gone = ::kill(agent, 0) != 0 || slurp(("/proc/" + std::to_string(agent) + "/stat").c_str()).find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(gone) << "gc left the frozen agent " << agent << " alive";
}

}  // namespace
}  // namespace netbox::launcher
