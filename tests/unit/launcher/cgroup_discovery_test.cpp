// Finding this process's cgroups: /proc/self/cgroup and /proc/self/mountinfo as the
// kernel writes them (v1, v2, hybrid, containers), and the cgroup flags' values.
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/cgroup_discovery.hpp"
#include "netbox/launcher/launch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What this project's CI machine shows: v1 hierarchies, cpu and cpuacct apart, and an
// almost empty v2 hierarchy beside them.
const char* kHybridMountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "50 23 0:40 / /proc rw,nosuid - proc proc rw\n";

const char* kHybridProcCgroup =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "4:memory:/process_api/2193627065b3c17da2cb27d807f4c46f\n"
    "2:cpuacct:/\n"
    "1:cpu:/\n"
    "0::/\n";

TEST(ProcCgroup, ParsesV1AndV2Lines) {
  auto e = parse_proc_cgroup("4:memory:/a/b\n1:cpu,cpuacct:/\n0::/user.slice/x:y.scope\ngarbage\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].hierarchy, 4);
  EXPECT_THAT(e[0].controllers, ElementsAre("memory"));
  EXPECT_EQ(e[0].path, "/a/b");
  EXPECT_THAT(e[1].controllers, ElementsAre("cpu", "cpuacct"));
  EXPECT_TRUE(e[2].controllers.empty());
  EXPECT_EQ(e[2].path, "/user.slice/x:y.scope");  // a ':' in the path stays in the path
}

TEST(Mountinfo, FindsCgroupMountsWithTheirControllers) {
  auto m = parse_cgroup_mounts(kHybridMountinfo);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_THAT(m[0].controllers, ElementsAre("cpu"));
  EXPECT_THAT(m[2].controllers, ElementsAre("memory"));  // past the optional "shared:12"
  EXPECT_THAT(m[4].controllers, ElementsAre("xattr", "name=systemd"));
  EXPECT_TRUE(m[5].unified);
  EXPECT_EQ(m[5].mount_point, "/sys/fs/cgroup/unified");
}

TEST(Mountinfo, UnescapesMountPoints) {
  auto m = parse_cgroup_mounts("32 31 0:29 / /mnt/with\\040space rw - cgroup cgroup rw,pids\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount_point, "/mnt/with space");
}

TEST(OwnCgroupDir, JoinsTheMountAndTheProcesssPath) {
  auto entries = parse_proc_cgroup(kHybridProcCgroup);
  auto mounts = parse_cgroup_mounts(kHybridMountinfo);
  EXPECT_EQ(own_cgroup_dir(entries, mounts, "memory"),
            std::filesystem::path("/sys/fs/cgroup/memory/process_api/2193627065b3c17da2cb27d807f4c46f"));
  EXPECT_EQ(own_cgroup_dir(entries, mounts, "cpu"), std::filesystem::path("/sys/fs/cgroup/cpu"));
  EXPECT_EQ(own_cgroup_dir(entries, mounts, "cpuacct"), std::filesystem::path("/sys/fs/cgroup/cpuacct"));
  EXPECT_EQ(own_cgroup_dir(entries, mounts, ""), std::filesystem::path("/sys/fs/cgroup/unified"));
  EXPECT_FALSE(own_cgroup_dir(entries, mounts, "blkio").has_value());  // not mounted
}

TEST(OwnCgroupDir, AMountOfASubtreeIsReadRelativeToItsRoot) {
  // A container that sees only its own part of the hierarchy, mounted at /sys/fs/cgroup/memory.
  auto mounts = parse_cgroup_mounts("35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  EXPECT_EQ(own_cgroup_dir(parse_proc_cgroup("4:memory:/docker/abc/job\n"), mounts, "memory"),
            std::filesystem::path("/sys/fs/cgroup/memory/job"));
  EXPECT_EQ(own_cgroup_dir(parse_proc_cgroup("4:memory:/docker/abc\n"), mounts, "memory"),
            std::filesystem::path("/sys/fs/cgroup/memory"));
  // A cgroup outside what is mounted cannot be reached: never a guessed path.
  EXPECT_FALSE(own_cgroup_dir(parse_proc_cgroup("4:memory:/docker/abcdef\n"), mounts, "memory").has_value());
  EXPECT_FALSE(own_cgroup_dir(parse_proc_cgroup("4:memory:/other\n"), mounts, "memory").has_value());
}

TEST(OwnCgroupDir, CoMountedControllersShareTheirFolder) {
  auto mounts = parse_cgroup_mounts("32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
  auto entries = parse_proc_cgroup("2:cpu,cpuacct:/user.slice\n");
  EXPECT_EQ(own_cgroup_dir(entries, mounts, "cpu"), own_cgroup_dir(entries, mounts, "cpuacct"));
  EXPECT_EQ(own_cgroup_dir(entries, mounts, "cpu"), std::filesystem::path("/sys/fs/cgroup/cpu,cpuacct/user.slice"));
}

TEST(CgroupLimits, DefaultsCapPidsAndHalfTheMemory) {
  auto l = cgroup_limits({});
  EXPECT_EQ(l.pids, 1024u);
  ASSERT_TRUE(l.memory_bytes.has_value());
  EXPECT_EQ(*l.memory_bytes, default_memory_bytes());
  EXPECT_GT(*l.memory_bytes, 0u);
  EXPECT_FALSE(l.cpus.has_value());
}

TEST(CgroupLimits, ValuesUseTheRlimitGrammar) {
  CgroupFlags f;
  f.memory = "128M";
  f.cpus = "0.5";
  f.pids = "64";
  auto l = cgroup_limits(f);
  EXPECT_EQ(l.memory_bytes, 128u * 1024 * 1024);
  EXPECT_EQ(l.cpus, 0.5);
  EXPECT_EQ(l.pids, 64u);
  f.memory = "unlimited";
  f.pids = "unlimited";
  l = cgroup_limits(f);
  EXPECT_FALSE(l.memory_bytes.has_value());
  EXPECT_FALSE(l.pids.has_value());
}

CgroupFlags flag(std::optional<std::string> CgroupFlags::*field, const char* value) {
  CgroupFlags f;
  f.*field = value;
  return f;
}

TEST(CgroupLimits, BadValuesAreUsageErrorsNamingTheFlag) {
  auto expect_bad = [](CgroupFlags f, const std::string& needle) {
    try {
      cgroup_limits(f);
      ADD_FAILURE() << "accepted " << needle;
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.exit_code(), kExitUsage);
      EXPECT_THAT(e.what(), HasSubstr(needle));
    }
  };
  expect_bad(flag(&CgroupFlags::memory, "lots"), "--memory 'lots'");
  expect_bad(flag(&CgroupFlags::memory, "0"), "--memory '0'");
  expect_bad(flag(&CgroupFlags::memory, "1M"), "--memory '1M': the minimum is 6M");
  expect_bad(flag(&CgroupFlags::cpus, "half"), "--cpus 'half'");
  expect_bad(flag(&CgroupFlags::cpus, "0"), "--cpus '0'");
  expect_bad(flag(&CgroupFlags::cpus, "0.5x"), "--cpus '0.5x'");
  expect_bad(flag(&CgroupFlags::cpus, "nan"), "--cpus 'nan'");
  expect_bad(flag(&CgroupFlags::cpus, "100000"), "--cpus '100000': this machine has");
  expect_bad(flag(&CgroupFlags::pids, "0"), "--pids '0'");
  expect_bad(flag(&CgroupFlags::pids, "-5"), "--pids '-5'");
  expect_bad(flag(&CgroupFlags::pids, "1.5"), "--pids '1.5'");
}

TEST(OomReport, NamesTheMemoryFlagOnlyAfterAnOomKill) {
  CgroupLimits l;
  l.memory_bytes = 128u << 20;
  l.memory_text = "128M";
  CgroupUsage u;
  EXPECT_EQ(oom_report(u, l, 137), "");
  u.oom_kill = 0;
  EXPECT_EQ(oom_report(u, l, 137), "");
  u.oom_kill = 1;
  EXPECT_EQ(oom_report(u, l, 137), "netbox launch: the agent was killed for running out of memory (--memory 128M)");
  EXPECT_THAT(oom_report(u, l, 0), HasSubstr("1 process of the agent killed for running out of memory (--memory 128M)"));
}

TEST(CgroupUsage, JsonHoldsOnlyWhatWasMeasured) {
  CgroupUsage u;
  EXPECT_EQ(u.json(), "{}");
  u.memory_peak_bytes = 4096;
  u.oom_kill = 1;
  u.cpu_usage_ms = 12;
  EXPECT_EQ(u.json(), R"({"cpu_usage_ms":12,"memory_peak_bytes":4096,"oom_kill":1})");
}

}  // namespace
}  // namespace netbox::launcher
