// The policy's sandbox fills in only what no flag set.
#include "netbox/launcher/policy_sandbox.hpp"

#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

TEST(PolicySandbox, FillsWhatNoFlagSetAndLeavesFlagsAlone) {
  policy::SandboxSettings s;
  s.workdir = "/srv/work";
  s.ro = std::vector<std::string>{"/opt/a"};
  s.rw = std::vector<std::string>{"/srv/cache"};
  s.tmp_size = "256M";
  s.memory = "64M";
  s.pids = "32";
  s.cpus = "0.5";
  s.user = "builder";
  s.allow_degraded = std::vector<std::string>{"cgroup"};

  LaunchOptions flags;
  flags.cgroup.memory = "96M";
  flags.rw = {"/srv/other"};
  flags.user = "nobody";
  const LaunchOptions o = with_policy_sandbox(flags, s);
  EXPECT_EQ(o.cgroup.memory, "96M");
  EXPECT_EQ(o.rw, std::vector<std::string>{"/srv/other"}) << "a repeatable flag replaces the policy's list";
  EXPECT_EQ(o.user, "nobody");
  EXPECT_EQ(o.workdir, "/srv/work");
  EXPECT_EQ(o.ro, std::vector<std::string>{"/opt/a"});
  EXPECT_EQ(o.cgroup.pids, "32");
  EXPECT_EQ(o.cgroup.cpus, "0.5");
  EXPECT_EQ(o.tmp_size, "256M");
  EXPECT_EQ(o.allow_degraded, std::vector<std::string>{"cgroup"});
  EXPECT_FALSE(o.workdir_quota);

  flags.tmp_size = "2G";
  flags.tmp_size_given = true;
  EXPECT_EQ(with_policy_sandbox(flags, s).tmp_size, "2G");
  EXPECT_EQ(with_policy_sandbox(LaunchOptions{}, policy::SandboxSettings{}).tmp_size, "1G") << "the default stays";
}

TEST(PolicySandbox, NetworkFillsInUnlessTheFlagWasGiven) {
  policy::SandboxSettings s;
  s.network = "proxy-vars";
  EXPECT_EQ(with_policy_sandbox(LaunchOptions{}, s).network, "proxy-vars");
  LaunchOptions flags;
  flags.network = "transparent";
  flags.network_given = true;
  EXPECT_EQ(with_policy_sandbox(flags, s).network, "transparent");
  EXPECT_EQ(with_policy_sandbox(LaunchOptions{}, policy::SandboxSettings{}).network, "transparent") << "the default";
}

}  // namespace
}  // namespace netbox::launcher
