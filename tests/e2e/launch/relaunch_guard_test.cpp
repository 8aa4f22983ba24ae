// A launch is a new agent, even under the name of one that came before it: the guard of a
// launch attached to a shared proxy over sockets (budgets, rates, what the guardian did)
// goes when it detaches. The policy's limits are "per agent per launch": an agent that
// spent its bytes_down budget and is launched again under the same --name has the whole
// budget again, and the proxy keeps nothing of the old launch's guard.
#include "launch_fixture.hpp"
#include "support/background_process.hpp"
#include "support/raw_upstream.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// /big answers 200 KB (past the budget); anything else a 3-byte body.
void serve(test::RawUpstream& server, int fd, std::size_t) {
  std::string pending;
  while (true) {
    const auto head = server.read_head(fd, pending);
    if (head.empty()) return;
    const std::string body = head.rfind("GET /big ", 0) == 0 ? std::string(200 * 1024, 'x') : "ok\n";
    if (!test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body))
      return;
  }
}

// The admin API's answer for the agent's guard: its status code.
std::string guard_status(const std::string& admin, const std::string& agent) {
  return test::run({kCurl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://" + admin + "/api/agents/" + agent})
      .out;
}

TEST(LaunchRelaunchGuard, ASpentBudgetIsNotInheritedByTheNextLaunchOfTheSameName) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(166);
  test::RawUpstream upstream(serve);
  HostDir host;
  test::TempDir dir;
  auto policy = nlohmann::json::parse(policy_json(upstream.port()));
  policy["limits"] = {{"bytes_down", "64K"}};
  const std::string admin = "127.0.0.1:" + std::to_string(test::free_port());
  SharedProxy proxy(host, dir.write("policy.json", policy.dump()), {"--admin", admin, "--admin-insecure"});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string base = "http://allowed.test:" + std::to_string(upstream.port());
  const std::string small = std::string(kCurl) + " -s -m 20 -o /dev/null -w 'small=%{http_code}\\n' " + base + "/small";
  // The first launch spends its budget on /big (cut), then is refused.
  auto first = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", "again", "--", kSh, "-c",
                               std::string(kCurl) + " -s -m 20 -o /dev/null " + base + "/big; " + small});
  EXPECT_THAT(first.out, HasSubstr("small=403")) << first.out << first.err;
  // Detached: the proxy keeps no guard of it (a guard per launch would pile up otherwise).
  EXPECT_TRUE(eventually([&] { return guard_status(admin, "again") == "404"; })) << guard_status(admin, "again");
  // The same name again: a new agent, with the whole budget.
  auto second = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", "again", "--", kSh, "-c", small});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("small=200")) << second.out << second.err;
  EXPECT_THAT(second.out, Not(HasSubstr("small=403")));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT decision FROM requests WHERE path = '/big'"),
            (std::vector<std::vector<std::string>>{{"budget"}}));
  EXPECT_EQ(query(proxy.store(), "SELECT decision FROM requests WHERE path = '/small' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"budget"}, {"allow"}}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
