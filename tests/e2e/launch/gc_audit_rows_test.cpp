// A launcher killed with SIGKILL cannot record its agent's end nor complete its open
// requests: `netbox gc` closes those rows (issue 27 item 6), so `netbox audit agents`
// does not show a dead agent as running forever.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;

TEST(LaunchGc, ClosesTheAuditRowsOfAKilledLauncher) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(96);
  HttpServer upstream("127.0.0.1", 2);  // holds the agent's one request (up to 60 s)
  test::TempDir dir;
  HostDir host;
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const auto db = dir.path() / "a.db";
  const std::string agent = std::string(kCurl) + " -s http://allowed.test:" + std::to_string(upstream.port()) + "/slow";
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy", policy.string(),
                       "--audit-db", db.string(), "--name", "doomed", "--", kSh, "-c", agent},
                      host.path(), "launcher");
  // The request is at the upstream and its row (not completed) is in the store.
  ASSERT_TRUE(eventually([&] { return upstream.connections() >= 1; })) << launcher.err();
  ASSERT_TRUE(eventually([&] {
    return query(db, "SELECT COUNT(*) FROM requests WHERE duration_ms IS NULL") ==
               std::vector<std::vector<std::string>>{{"1"}} &&
           query(db, "SELECT COUNT(*) FROM agents WHERE ended IS NULL") == std::vector<std::vector<std::string>>{{"1"}};
  })) << launcher.err();
  ::kill(launcher.pid(), SIGKILL);
  launcher.wait();
  // The agent's init dies with its launcher (PR_SET_PDEATHSIG): gc sees its pid gone.
  test::RunResult gc;
  ASSERT_TRUE(eventually([&] {
    gc = test::run_netbox({"gc", "--audit-db", db.string()});
    return gc.out.find("closed agent doomed") != std::string::npos;
  })) << gc.out << gc.err;
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("closed agent doomed (pid "));
  EXPECT_THAT(gc.out, HasSubstr("1 open requests"));
  EXPECT_EQ(query(db, "SELECT ended IS NOT NULL, json_extract(resource_usage, '$.ended_by') FROM agents"),
            (std::vector<std::vector<std::string>>{{"1", "gc"}}));
  EXPECT_EQ(query(db, "SELECT path, duration_ms IS NOT NULL, error LIKE 'closed by netbox gc: its launcher died%' "
                      "FROM requests"),
            (std::vector<std::vector<std::string>>{{"/slow", "1", "1"}}));
  auto agents = test::run_netbox({"audit", "agents", "--db", db.string(), "--format", "csv"});
  EXPECT_THAT(agents.out, HasSubstr("its launcher died")) << agents.out;
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
