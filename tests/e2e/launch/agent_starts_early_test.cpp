// The agent starts while the embedded proxy is still starting (its audit store's open,
// the longest step of a launch): its sockets listen in its namespace already, so what it
// sends first waits in their queues. These pin what that must not change: a request made
// in the agent's first instant is answered and audited as any other, after its agents
// row, and a proxy that fails to start kills the agent it started
// and lets nothing it sent out.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <sqlite3.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using test::query;

TEST(LaunchLifecycle, ARequestInTheAgentsFirstInstantIsAnsweredAndAuditedAfterItsAgentsRow) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(160);
  HttpServer upstream;
  test::TempDir dir;
  HostDir host;
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/first";
  // Twice: into a store the proxy makes while the agent starts, then into one that exists.
  const auto db = dir.path() / "a.db";
  for (const int run : {1, 2}) {
    std::vector<std::string> args = {"--policy", policy.string(), "--audit-db", db.string(), "--name", "eager"};
    // The command's first act: curl is exec'd as the agent itself, nothing before it.
    for (const auto& a : {"--", kCurl, "-s", "--max-time", "30", url.c_str()}) args.emplace_back(a);
    auto r = launch(subnet, args);
    EXPECT_EQ(r.exit_code, 0) << "run " << run << ": " << r.err;
    EXPECT_EQ(r.out, HttpServer::kBody) << "run " << run;
    EXPECT_THAT(r.err, HasSubstr("1 requests allowed, 0 refused")) << "run " << run;
    // One agents row, ended with the agent's status, and the request its own, completed.
    const std::string last_agent = " FROM agents WHERE id = (SELECT MAX(id) FROM agents)";
    EXPECT_EQ(query(db, "SELECT name, exit_status" + last_agent), (std::vector<std::vector<std::string>>{{"eager", "0"}}))
        << "run " << run;
    EXPECT_EQ(query(db, "SELECT agent, decision, status, path FROM requests WHERE id = (SELECT MAX(id) FROM requests)"),
              (std::vector<std::vector<std::string>>{{"eager", "allow", "200", "/first"}}))
        << "run " << run;
    // The agent is known (its row written) before the proxy decided its first request.
    EXPECT_EQ(query(db, "SELECT COUNT(*) FROM requests r JOIN agents a ON a.name = r.agent AND a.started <= r.ts"
                        " WHERE r.id = (SELECT MAX(id) FROM requests) AND a.id = (SELECT MAX(id) FROM agents)"),
              (std::vector<std::vector<std::string>>{{"1"}}))
        << "run " << run << ": " << testing::PrintToString(query(db, "SELECT started FROM agents"))
        << testing::PrintToString(query(db, "SELECT ts FROM requests"));
  }
  expect_nothing_left(subnet);
}

// A store held locked by another process: the proxy waits its busy timeout (5 s), so the
// agent has long started and sent its request when the proxy gives up.
TEST(LaunchLifecycle, AProxyThatFailsToStartKillsTheAgentItStartedAndNothingItSentLeaves) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(161);
  HttpServer upstream;
  test::TempDir dir;
  HostDir host;
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const auto db = dir.path() / "locked.db";
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/leak";
  const std::string agent = "echo started; " + std::string(kCurl) + " -s --max-time 60 " + url + "; echo curl returned";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c", agent});
  sqlite3_close(holder);
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_THAT(r.err, HasSubstr("starting the embedded proxy failed"));
  EXPECT_THAT(r.err, HasSubstr("locked"));
  EXPECT_THAT(r.out, HasSubstr("started"));            // it ran before the proxy gave up
  EXPECT_THAT(r.out, Not(HasSubstr("curl returned")));  // killed waiting, not answered
  EXPECT_EQ(upstream.connections(), 0);
  expect_nothing_left(subnet);
}

// A store beside the command the agent runs is covered file by file (its folder cannot be
// covered whole). A store this launch makes has no -wal or -shm when the init hides the
// rest, so there the agent waits for the proxy: else they would appear after the hiding,
// in the agent's view. The agent's first request is answered only once the store is open,
// so it looks after that.
TEST(LaunchLifecycle, AStoreMadeByTheLaunchBesideTheCommandIsHiddenEvenThoughTheAgentStartsEarly) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(162);
  HttpServer upstream;
  HostDir host;
  const auto work = host.folder("work");
  const auto tools = host.folder("tools");
  const auto policy = host.file("policy.json", policy_json(upstream.port()));
  const auto db = tools / "audit.db";
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/";
  const auto probe = host.file("tools/probe", "#!/bin/sh\n" + std::string(kCurl) + " -s -o /dev/null " + url +
                                                  "\nfor f in " + db.string() + " " + db.string() + "-wal " +
                                                  db.string() + "-shm; do [ -s \"$f\" ] && echo \"VISIBLE $f\"; done\n"
                                                  "echo checked\n",
                               std::filesystem::perms(0755));
  for (const int run : {1, 2}) {  // made by this launch, then there already
    std::vector<std::string> argv = {kSh, "-c", "cd \"$0\" && exec \"$@\"", work.string(),
                                     test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy",
                                     policy.string(), "--audit-db", db.string(), "--", probe.string()};
    auto r = test::run(argv, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << "run " << run << ": " << r.err;
    EXPECT_EQ(r.out, "checked\n") << "run " << run;
    EXPECT_EQ(query(db, "SELECT COUNT(*) FROM requests"), (std::vector<std::vector<std::string>>{{std::to_string(run)}}));
  }
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
