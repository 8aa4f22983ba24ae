// What an agent ran under is kept in its agents row (`sandbox`, the --explain report as
// JSON), written by the embedded proxy and by a running proxy alike, so a security team
// can query it after the fact.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

nlohmann::json sandbox_of(const fs::path& db) {
  auto rows = query(db, "SELECT sandbox FROM agents ORDER BY id");
  if (rows.size() != 1) return nullptr;
  return nlohmann::json::parse(rows.at(0).at(0), nullptr, false);
}

void expect_flags_recorded(const nlohmann::json& s, const fs::path& work) {
  ASSERT_TRUE(s.is_object()) << "no sandbox JSON in the agents row";
  EXPECT_THAT(s.value("user", std::string()), HasSubstr("nobody")) << s.dump();
  EXPECT_EQ(s.value("workdir", std::string()), fs::canonical(work).string()) << s.dump();
  ASSERT_TRUE(s.contains("cgroup") && s["cgroup"].is_object()) << s.dump();
  EXPECT_EQ(s["cgroup"].value("memory_bytes", 0ULL), 96ULL << 20) << s.dump();
  EXPECT_EQ(s["cgroup"].value("pids", 0ULL), 48ULL) << s.dump();
  EXPECT_DOUBLE_EQ(s["cgroup"].value("cpus", 0.0), 0.5) << s.dump();
  EXPECT_EQ(s["cgroup_limits"].value("memory", std::string()), "96M") << s.dump();
  EXPECT_FALSE(s.value("seccomp", std::string()).empty()) << s.dump();
}

TEST(LaunchSandboxRecord, TheAgentsRowKeepsTheSandboxTheAgentRanUnder) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(154);
  HostDir host;
  const auto work = host.folder("work");
  const auto db = host.folder("audit") / "audit.db";
  const std::vector<std::string> sandbox_flags = {"--user", "nobody", "--workdir", work.string(), "--memory", "96M",
                                                  "--pids", "48", "--cpus", "0.5"};

  std::vector<std::string> args = {"--audit-db", db.string()};
  args.insert(args.end(), sandbox_flags.begin(), sandbox_flags.end());
  args.insert(args.end(), {"--", "true"});
  auto r = launch(subnet, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_flags_recorded(sandbox_of(db), work);

  // Through a running proxy: the launcher sends the report in its "launch" object.
  const auto policy = host.folder("etc") / "policy.json";
  {
    std::ofstream(policy) << policy_json(9);
  }
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  args = {"--proxy-control", proxy.socket().string()};
  args.insert(args.end(), sandbox_flags.begin(), sandbox_flags.end());
  args.insert(args.end(), {"--", "true"});
  auto c = launch(subnet, args);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_flags_recorded(sandbox_of(proxy.store()), work);
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test

namespace netbox::launch_test {
namespace {

// The policy's sandbox applies where no flag is given; a flag wins over it, and an agent
// profile's sandbox over the top level's. Checked in the agents row (the limits the
// launcher put on the agent's cgroup) and, for the user and workdir, from inside.
TEST(LaunchSandboxRecord, ThePolicysSandboxAppliesAndFlagsOverrideIt) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(155);
  HostDir host;
  const auto work = host.folder("work");
  const auto db = host.folder("audit") / "audit.db";
  const auto policy = host.folder("etc") / "policy.json";
  {
    std::ofstream(policy) << R"({"version": 1,
      "sandbox": {"memory": "64M", "pids": 32, "user": "nobody", "workdir": ")" << work.string() << R"("},
      "agents": {"small": {"sandbox": {"memory": "48M"}}}})";
  }
  const std::string read_limits = "id -un; pwd";
  auto launch_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--policy", policy.string(), "--audit-db", db.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", kSh, "-c", read_limits});
    return launch(subnet, args);
  };

  auto from_policy = launch_with({});
  ASSERT_EQ(from_policy.exit_code, 0) << from_policy.err;
  auto overridden = launch_with({"--memory", "96M", "--pids", "40"});
  ASSERT_EQ(overridden.exit_code, 0) << overridden.err;
  auto profile = launch_with({"--name", "small"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;

  auto rows = query(db, "SELECT sandbox FROM agents ORDER BY id");
  ASSERT_EQ(rows.size(), 3u);
  std::vector<nlohmann::json> s;
  for (const auto& row : rows) s.push_back(nlohmann::json::parse(row.at(0), nullptr, false));
  for (const auto& j : s) {
    ASSERT_TRUE(j.is_object() && j["cgroup"].is_object()) << rows.size();
    EXPECT_THAT(j.value("user", std::string()), HasSubstr("nobody")) << j.dump();
    EXPECT_EQ(j.value("workdir", std::string()), fs::canonical(work).string()) << j.dump();
  }
  EXPECT_EQ(s[0]["cgroup"].value("memory_bytes", 0ULL), 64ULL << 20) << s[0].dump();
  EXPECT_EQ(s[0]["cgroup"].value("pids", 0ULL), 32ULL) << s[0].dump();
  EXPECT_EQ(s[1]["cgroup"].value("memory_bytes", 0ULL), 96ULL << 20) << s[1].dump();
  EXPECT_EQ(s[1]["cgroup"].value("pids", 0ULL), 40ULL) << s[1].dump();
  EXPECT_EQ(s[2]["cgroup"].value("memory_bytes", 0ULL), 48ULL << 20) << s[2].dump();
  EXPECT_EQ(s[2]["cgroup"].value("pids", 0ULL), 32ULL) << "the profile keeps the top level's pids: " << s[2].dump();

  // The user and the starting folder, seen from inside.
  const std::string work_line = "\n" + fs::canonical(work).string() + "\n";
  EXPECT_THAT(from_policy.out, HasSubstr("nobody" + work_line)) << from_policy.out;
  expect_nothing_left(subnet);
}

// A bad value in the policy's sandbox stops the launch with exit 2 and the position.
TEST(LaunchSandboxRecord, ABadSandboxValueInThePolicyIsAUsageError) {
  const auto subnet = test_subnet(108);
  HostDir host;
  const auto policy = host.folder("etc") / "policy.json";
  {
    std::ofstream(policy) << R"({"version": 1, "sandbox": {"memory": "64X"}})";
  }
  auto r = launch(subnet, {"--policy", policy.string(), "--explain", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(policy.string() + ":1:38: /sandbox/memory: must be a size"));
}

}  // namespace
}  // namespace netbox::launch_test
