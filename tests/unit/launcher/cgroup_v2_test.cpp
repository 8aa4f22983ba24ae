// The cgroup v2 backend on a directory tree shaped like /sys/fs/cgroup (files made by
// the test where the kernel would make them), and the choice between v2 and v1.
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/cgroup_backend.hpp"
#include "netbox/launcher/launch.hpp"

#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string contents(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A v2 hierarchy at ROOT/cg whose root offers cpu, memory and pids; the launcher sits in
// user.slice/session.scope, which (having processes) has nothing delegated.
struct V2Tree {
  test::TempDir tmp;
  fs::path mount = tmp.path() / "cg";
  fs::path own = mount / "user.slice" / "session.scope";
  V2Tree() {
    put(mount / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    put(mount / "cgroup.subtree_control", "");
    put(own / "cgroup.controllers", "");
    put(own / "cgroup.subtree_control", "");
  }
  std::string mountinfo() const {
    return "30 23 0:26 / " + mount.string() + " rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  }
  static std::string proc_cgroup() { return "0::/user.slice/session.scope\n"; }
};

CgroupLimits limits(std::optional<std::uint64_t> memory, std::optional<double> cpus, std::optional<std::uint64_t> pids) {
  CgroupLimits l;
  l.memory_bytes = memory;
  l.memory_text = "128M";
  l.cpus = cpus;
  l.cpus_text = "0.5";
  l.pids = pids;
  l.pids_text = "64";
  return l;
}

TEST(CgroupV2Plan, ANonDelegatedOwnCgroupMeansNetboxSlice) {
  V2Tree t;
  auto plan = plan_cgroup(limits(128u << 20, 0.5, 64), false, V2Tree::proc_cgroup(), t.mountinfo());
  EXPECT_EQ(plan.backend(), "v2");
  EXPECT_TRUE(plan.missing.empty());
  ASSERT_EQ(plan.parents.size(), 3u);
  for (const auto& [controller, parent] : plan.parents) EXPECT_EQ(parent, t.mount / "netbox.slice") << controller;
}

TEST(CgroupV2Plan, DescribesItselfForAReport) {
  V2Tree t;
  auto plan = plan_cgroup(limits(128u << 20, std::nullopt, 64), false, V2Tree::proc_cgroup(), t.mountinfo());
  const std::string slice = (t.mount / "netbox.slice").string();
  EXPECT_EQ(plan.json(), R"({"allow_degraded":false,"backend":"v2","cpus":null,"memory_bytes":134217728,"missing":[],)"
                         R"("notes":[],"parents":{"memory":")" + slice + R"(","pids":")" + slice + R"("},"pids":64})");
  auto lines = plan.describe();
  EXPECT_THAT(lines, ::testing::Contains("cgroup backend: v2"));
  EXPECT_THAT(lines, ::testing::Contains("--pids 64"));
  EXPECT_THAT(lines, ::testing::Contains("--cpus unlimited"));
  EXPECT_THAT(lines, ::testing::Contains("memory cgroup under " + slice));
}

TEST(CgroupV2Plan, ADelegatedOwnCgroupIsUsed) {
  V2Tree t;
  put(t.own / "cgroup.controllers", "cpu memory pids\n");
  put(t.own / "cgroup.subtree_control", "cpu memory pids\n");
  auto plan = plan_cgroup(limits(128u << 20, std::nullopt, 64), false, V2Tree::proc_cgroup(), t.mountinfo());
  EXPECT_EQ(plan.backend(), "v2");
  EXPECT_EQ(plan.parents.at("memory"), t.own);
  EXPECT_FALSE(plan.parents.contains("cpu"));  // no --cpus, no cpu controller needed
}

TEST(CgroupV2Plan, AV2HierarchyWithoutTheControllersFallsBackToV1) {
  V2Tree t;
  put(t.mount / "cgroup.controllers", "hugetlb\n");  // a hybrid system's unified hierarchy
  const fs::path v1 = t.tmp.path() / "v1";
  for (const char* c : {"memory", "cpu", "pids"}) fs::create_directories(v1 / c / "job");
  const std::string mountinfo = t.mountinfo() + "31 23 0:27 / " + (v1 / "memory").string() +
                                " rw - cgroup cgroup rw,memory\n32 23 0:28 / " + (v1 / "cpu").string() +
                                " rw - cgroup cgroup rw,cpu\n33 23 0:29 / " + (v1 / "pids").string() +
                                " rw - cgroup cgroup rw,pids\n";
  auto plan = plan_cgroup(limits(128u << 20, 0.5, 64), false,
                          "3:memory:/job\n2:cpu:/job\n1:pids:/job\n0::/user.slice/session.scope\n", mountinfo);
  EXPECT_EQ(plan.backend(), "v1");
  EXPECT_EQ(plan.parents.at("memory"), v1 / "memory" / "job");
  EXPECT_EQ(plan.parents.at("cpu"), v1 / "cpu" / "job");
  EXPECT_EQ(plan.parents.at("pids"), v1 / "pids" / "job");
  EXPECT_TRUE(plan.missing.empty());
  // No memory.memsw.limit_in_bytes in that tree: said so.
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_THAT(plan.notes[0], HasSubstr("swapaccount=0"));
}

TEST(CgroupV2Plan, AMissingControllerIsNamedByItsFlag) {
  V2Tree t;
  put(t.mount / "cgroup.controllers", "cpu memory\n");  // no pids anywhere
  auto plan = plan_cgroup(limits(128u << 20, std::nullopt, 64), false, V2Tree::proc_cgroup(), t.mountinfo());
  ASSERT_EQ(plan.missing.size(), 1u);
  EXPECT_THAT(plan.missing[0], HasSubstr("--pids 64"));
  EXPECT_THAT(plan.missing[0], HasSubstr("pids"));
}

TEST(CgroupV2Plan, NoLimitsNeedNoCgroup) {
  V2Tree t;
  auto plan = plan_cgroup(limits(std::nullopt, std::nullopt, std::nullopt), false, V2Tree::proc_cgroup(), t.mountinfo());
  EXPECT_EQ(plan.backend(), "none");
  EXPECT_TRUE(plan.missing.empty());
}

TEST(AgentCgroupFailsClosed, AMissingLimitStopsTheLaunchWith125UnlessDegradingIsAllowed) {
  test::TempDir state;
  CgroupPlan plan;
  plan.limits = limits(std::nullopt, std::nullopt, 64);
  plan.missing.push_back("--pids 64: this machine offers no pids cgroup controller");
  try {
    AgentCgroup cgroup(plan, "netbox-nbx00000000-1", state.path());
    ADD_FAILURE() << "a missing controller was accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitLauncherFailure);
    EXPECT_THAT(e.what(), HasSubstr("--pids 64"));
    EXPECT_THAT(e.what(), HasSubstr("--allow-degraded cgroup"));
  }
  plan.allow_degraded = true;
  AgentCgroup degraded(plan, "netbox-nbx00000000-1", state.path());
  EXPECT_TRUE(degraded.dirs().empty());
}

TEST(CgroupV2Backend, PrepareParentSetsUpNetboxSliceWhenTheOwnCgroupCannotDelegate) {
  V2Tree t;
  // The kernel would make these in the new folder; here the test does.
  put(t.mount / "netbox.slice" / "cgroup.controllers", "cpu memory pids\n");
  put(t.mount / "netbox.slice" / "cgroup.subtree_control", "");
  auto parent = cgroup_v2::prepare_parent(t.mount, t.own, {"memory", "pids"});
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(*parent, t.mount / "netbox.slice");
  EXPECT_EQ(contents(t.mount / "cgroup.subtree_control"), "+memory +pids");
  EXPECT_EQ(contents(t.mount / "netbox.slice" / "cgroup.subtree_control"), "+memory +pids");
  EXPECT_EQ(contents(t.own / "cgroup.subtree_control"), "");  // the launcher's own cgroup is left alone
}

TEST(CgroupV2Backend, PrepareParentUsesADelegatedOwnCgroupAsIs) {
  V2Tree t;
  put(t.own / "cgroup.subtree_control", "memory pids cpu\n");
  auto parent = cgroup_v2::prepare_parent(t.mount, t.own, {"memory", "pids", "cpu"});
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(*parent, t.own);
  EXPECT_EQ(contents(t.mount / "cgroup.subtree_control"), "");  // nothing touched above
  EXPECT_FALSE(fs::exists(t.mount / "netbox.slice"));
}

TEST(CgroupV2Backend, PrepareParentNeverDelegatesFromTheLaunchersOwnNonRootCgroup) {
  V2Tree t;
  // Its parent offers the controllers, but the launcher's own cgroup has processes (the
  // launcher): enabling them there is what the kernel refuses, and not netbox's to change.
  put(t.own / "cgroup.controllers", "cpu memory pids\n");
  put(t.mount / "netbox.slice" / "cgroup.controllers", "cpu memory pids\n");
  put(t.mount / "netbox.slice" / "cgroup.subtree_control", "");
  EXPECT_EQ(cgroup_v2::prepare_parent(t.mount, t.own, {"memory"}), t.mount / "netbox.slice");
  EXPECT_EQ(contents(t.own / "cgroup.subtree_control"), "");
}

TEST(CgroupV2Backend, PrepareParentEnablesControllersAtTheRootForALauncherThere) {
  V2Tree t;
  EXPECT_EQ(cgroup_v2::prepare_parent(t.mount, t.mount, {"memory", "pids"}), t.mount);
  EXPECT_EQ(contents(t.mount / "cgroup.subtree_control"), "+memory +pids");
  EXPECT_FALSE(fs::exists(t.mount / "netbox.slice"));
}

TEST(CgroupV2Backend, PrepareParentRefusesWhatTheHierarchyDoesNotOffer) {
  V2Tree t;
  put(t.mount / "cgroup.controllers", "cpu memory\n");
  EXPECT_FALSE(cgroup_v2::prepare_parent(t.mount, t.own, {"memory", "pids"}).has_value());
}

TEST(CgroupV2Backend, LimitsAreWrittenInTheKernelsFormat) {
  V2Tree t;
  const fs::path dir = t.mount / "netbox.slice" / "netbox-nbx0ad5a000-42";
  for (const char* f : {"memory.max", "memory.swap.max", "cpu.max", "pids.max"}) put(dir / f, "max\n");
  cgroup_v2::apply_limits(dir, limits(128u << 20, 0.5, 64));
  EXPECT_EQ(contents(dir / "memory.max"), "134217728");
  EXPECT_EQ(contents(dir / "memory.swap.max"), "0");  // swap off
  EXPECT_EQ(contents(dir / "cpu.max"), "50000 100000");
  EXPECT_EQ(contents(dir / "pids.max"), "64");
}

TEST(CgroupV2Backend, AControllerFileThatIsNotThereNamesTheFlag) {
  V2Tree t;
  const fs::path dir = t.mount / "netbox-nbx0ad5a000-42";
  put(dir / "memory.max", "max\n");  // no pids.max: the pids controller is not enabled
  try {
    cgroup_v2::apply_limits(dir, limits(128u << 20, std::nullopt, 64));
    ADD_FAILURE() << "a missing pids.max was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--pids 64"));
    EXPECT_THAT(e.what(), HasSubstr("pids.max"));
  }
}

TEST(CgroupV2Backend, UsageIsReadFromTheCgroupsOwnAccounting) {
  V2Tree t;
  const fs::path dir = t.mount / "netbox-nbx0ad5a000-42";
  put(dir / "memory.peak", "134217728\n");
  put(dir / "memory.events", "low 0\nhigh 0\nmax 31\noom 2\noom_kill 1\noom_group_kill 0\n");
  put(dir / "cpu.stat", "usage_usec 1503211\nuser_usec 1500000\nsystem_usec 3211\n");
  put(dir / "pids.peak", "3\n");
  auto u = cgroup_v2::read_usage(dir);
  EXPECT_EQ(u.memory_peak_bytes, 134217728u);
  EXPECT_EQ(u.oom_kill, 1u);
  EXPECT_EQ(u.cpu_usage_ms, 1503u);
  EXPECT_EQ(u.pids_peak, 3u);
  // Older kernels have no memory.peak or pids.peak: left out, not zero.
  fs::remove(dir / "memory.peak");
  fs::remove(dir / "pids.peak");
  u = cgroup_v2::read_usage(dir);
  EXPECT_FALSE(u.memory_peak_bytes.has_value());
  EXPECT_FALSE(u.pids_peak.has_value());
  EXPECT_EQ(u.json(), R"({"cpu_usage_ms":1503,"oom_kill":1})");
}

TEST(CgroupV2Backend, AttachWritesThePidIntoCgroupProcs) {
  V2Tree t;
  const fs::path dir = t.mount / "netbox-nbx0ad5a000-42";
  put(dir / "cgroup.procs", "");
  attach_to_cgroup(dir, 4242);
  EXPECT_EQ(contents(dir / "cgroup.procs"), "4242");
}


// The kill switch and cleanup on v2: cgroup.kill takes the whole subtree at once, and a
// frozen cgroup is thawed (cgroup.freeze 0) so that nothing is left pending in it.
TEST(CgroupV2Backend, KillWritesCgroupKillAndThawsAFrozenCgroup) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "netbox-nbx00000000-1";
  put(dir / "cgroup.kill", "");
  put(dir / "cgroup.freeze", "1\n");
  put(dir / "cgroup.procs", "");
  EXPECT_TRUE(kill_cgroup(dir, CgroupVersion::v2, std::chrono::steady_clock::now()));
  EXPECT_EQ(contents(dir / "cgroup.kill"), "1");
  thaw_cgroup(dir);
  EXPECT_EQ(contents(dir / "cgroup.freeze"), "0");
}

}  // namespace
}  // namespace netbox::launcher
