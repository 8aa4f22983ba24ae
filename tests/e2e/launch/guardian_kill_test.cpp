// The guardian's kill switch under `netbox launch` (issue 25): an agent that keeps asking
// for a denied host is ended by a "denied >= 3 in 60s" -> kill rule: its processes are
// gone before it gets past the denials, the launcher says so on stderr naming the rule,
// and the audit store has the guardian_action row saying the kill was done. A `freeze`
// rule stops the agent where it is (a counting loop makes no progress), and a frozen agent
// can still be ended: stopping its launch leaves nothing behind.
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"

#include <gmock/gmock.h>

#include <signal.h>

#include <fstream>
#include <iterator>
#include <thread>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchGuardian, DenialsOverTheThresholdKillTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(131);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = policy_json(upstream.port());
  policy.insert(policy.rfind('}'), R"(, "guardian": {"rules": [{"on": ["denied >= 3 in 60s"], "action": "kill"}]})");
  const auto policy_file = dir.write("policy.json", policy);
  const auto db = dir.path() / "audit.db";
  const std::string denied = std::string(kCurl) + " -s -o /dev/null http://denied.test:" + std::to_string(upstream.port()) + "/";
  // Ten denials, then a long sleep and a line it must never print.
  const auto r = launch(subnet, {"--policy", policy_file.string(), "--audit-db", db.string(), "--", kSh, "-c",
                                 "for i in 1 2 3 4 5 6 7 8 9 10; do " + denied + "; done; sleep 50; echo survived"});
  EXPECT_THAT(r.out, Not(HasSubstr("survived")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("the guardian is killing the agent: guardian.rules[0]"));
  const auto kinds = test::query_column(db, "SELECT kind FROM events WHERE kind LIKE 'guardian%'");
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), "guardian_action");
  const auto messages = test::query_column(db, "SELECT message FROM events WHERE kind = 'guardian_action'");
  ASSERT_FALSE(messages.empty());
  EXPECT_THAT(messages.front(), HasSubstr("killed"));
  expect_nothing_left(subnet);
}

TEST(LaunchGuardian, DenialsOverTheThresholdFreezeTheAgentWhichCanStillBeEnded) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(127);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = policy_json(upstream.port());
  policy.insert(policy.rfind('}'), R"(, "guardian": {"rules": [{"on": ["denied >= 3 in 60s"], "action": "freeze"}]})");
  const auto policy_file = dir.write("policy.json", policy);
  const auto db = dir.path() / "audit.db";
  const std::string denied = std::string(kCurl) + " -s -o /dev/null http://denied.test:" + std::to_string(upstream.port()) + "/";
  // Three denials, then a counter printing as fast as the shell goes.
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy",
                       policy_file.string(), "--audit-db", db.string(), "--", kSh, "-c",
                       "for i in 1 2 3; do " + denied + "; done; i=0; while :; do i=$((i+1)); echo $i; done"},
                      dir.path(), "frozen");
  ASSERT_TRUE(eventually([&] { return launcher.err().find("the guardian froze the agent: guardian.rules[0]") != std::string::npos; })) << launcher.err();
  ASSERT_TRUE(eventually([&] {
    return !test::query_column(db, "SELECT message FROM events WHERE kind = 'guardian_action'").empty();
  }));
  const auto messages = test::query_column(db, "SELECT message FROM events WHERE kind = 'guardian_action'");
  EXPECT_THAT(messages.front(), HasSubstr("frozen"));
  // Frozen: the count stands still (a running shell prints thousands of lines in this time).
  const auto held = launcher.out().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(launcher.out().size(), held) << "a frozen agent went on counting";
  // Ended while frozen: the launch stops, and nothing of it is left.
  ::kill(launcher.pid(), SIGTERM);
  const auto ended = [pid = launcher.pid()] {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    return stat.empty() || stat.find(") Z") != std::string::npos;
  };
  ASSERT_TRUE(eventually(ended, std::chrono::seconds(20))) << "a frozen agent kept its launch from ending";
  launcher.wait();
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
