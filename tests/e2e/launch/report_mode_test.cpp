// Learn, then enforce (issue 27 item 2): `netbox launch --mode report` lets the policy's
// refusals through and records them as `report`; `netbox policy suggest` turns the rows
// into a policy that `policy check` accepts and under which the same agent passes in
// enforce mode. What report mode never relaxes: an internal address (here a name pinned
// to cloud metadata) stays refused.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A blackhole route for the metadata address while the test runs: a wrong decision that
// let the probe through would dial it, and must reach nothing.
struct MetadataBlackhole {
  bool added = test::run({"ip", "route", "add", "blackhole", "169.254.169.254/32"}).exit_code == 0;
  ~MetadataBlackhole() {
    if (added) test::run({"ip", "route", "del", "blackhole", "169.254.169.254/32"});
  }
};

std::string learn_policy(std::uint16_t port) {
  auto j = nlohmann::json::parse(policy_json(port));
  j["allow"].push_back("metadata.test");  // allowed by name: only the internal range refuses it
  j["resolve"]["metadata.test"] = {"169.254.169.254"};
  return j.dump(2);
}

// The agent: two requests it needs (one the policy refuses), each must succeed (curl -f),
// and a probe of cloud metadata whose answer it prints.
std::vector<std::string> agent(const std::string& port) {
  const std::string script = std::string(kCurl) + " -sf http://allowed.test:" + port + "/a/one && " + kCurl +
                             " -sf http://denied.test:" + port + "/b/two/three && " + kCurl +
                             " -s -o /dev/null -w 'metadata %{http_code}\\n' http://metadata.test/latest/meta-data/";
  return {"--", kSh, "-c", script};
}

std::vector<std::string> with(std::vector<std::string> flags, const std::vector<std::string>& tail) {
  flags.insert(flags.end(), tail.begin(), tail.end());
  return flags;
}

TEST(LaunchReportMode, LearnSuggestCheckThenEnforce) {
  NETBOX_REQUIRE_ROOT();
  const MetadataBlackhole blackhole;
  const auto subnet = test_subnet(97);
  HttpServer upstream;
  test::TempDir dir;
  const std::string port = std::to_string(upstream.port());
  const auto policy = dir.write("policy.json", learn_policy(upstream.port()));
  const auto db = (dir.path() / "a.db").string();

  // Enforcing the policy as written, the agent fails: denied.test is refused.
  auto before = launch(subnet, with({"--policy", policy.string(), "--audit-db", (dir.path() / "e.db").string(),
                                     "--name", "learner"}, agent(port)));
  EXPECT_NE(before.exit_code, 0) << before.out << before.err;

  // Report mode: denied.test goes through, recorded as report; metadata stays refused.
  auto learn = launch(subnet, with({"--learn", "--policy", policy.string(), "--audit-db", db, "--name", "learner"},
                                   agent(port)));
  EXPECT_EQ(learn.exit_code, 0) << learn.out << learn.err;
  EXPECT_THAT(learn.out, HasSubstr("metadata 403")) << learn.out;
  EXPECT_THAT(learn.err, HasSubstr("REPORT MODE")) << learn.err;
  EXPECT_THAT(learn.err, HasSubstr("netbox: reported (enforce would refuse) GET denied.test:" + port + "/b/two/three"))
      << learn.err;
  EXPECT_THAT(learn.err, testing::ContainsRegex("netbox launch: learner exited 0 after [0-9]+m?s; report mode: 1 "
                                                "requests allowed, 1 reported \\(enforce mode would refuse them\\), 1 "
                                                "refused: netbox audit"))
      << learn.err;
  EXPECT_EQ(query(db, "SELECT host, decision, rule FROM requests ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"allowed.test", "allow", "allow[0] allowed.test"},
                                                   {"denied.test", "report", ""},
                                                   {"metadata.test", "deny", "internal"}}));
  EXPECT_EQ(query(db, "SELECT json_extract(sandbox, '$.mode') FROM agents"),
            (std::vector<std::vector<std::string>>{{"report"}}));

  // The suggestion: the run's policy with denied.test added, and no "mode".
  auto suggest = test::run({test::netbox_binary().string(), "policy", "suggest", "--db", db, "--agent", "learner",
                            "--policy", policy.string()});
  ASSERT_EQ(suggest.exit_code, 0) << suggest.err;
  EXPECT_THAT(suggest.out, HasSubstr("//   allow denied.test:" + port + ": 1 reported")) << suggest.out;
  EXPECT_THAT(suggest.out, HasSubstr("not suggested, refused 1x: metadata.test:80 (deny, internal)")) << suggest.out;
  const auto suggested = dir.write("suggested.json", suggest.out);
  auto check = test::run({test::netbox_binary().string(), "policy", "check", suggested.string(), "--host",
                          "denied.test", "--port", port, "--expect", "allow"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err << suggest.out;
  auto metadata = test::run({test::netbox_binary().string(), "policy", "check", suggested.string(), "--host",
                             "metadata.test", "--port", "80", "--expect", "deny"});
  EXPECT_EQ(metadata.exit_code, 0) << metadata.out << metadata.err;

  // Enforcing the suggestion, the same agent passes.
  const auto db2 = (dir.path() / "b.db").string();
  auto enforce = launch(subnet, with({"--mode", "enforce", "--policy", suggested.string(), "--audit-db", db2, "--name",
                                      "learner"}, agent(port)));
  EXPECT_EQ(enforce.exit_code, 0) << enforce.out << enforce.err;
  EXPECT_THAT(enforce.out, HasSubstr("metadata 403"));
  EXPECT_EQ(query(db2, "SELECT host, decision FROM requests ORDER BY id"),
            (std::vector<std::vector<std::string>>{
                {"allowed.test", "allow"}, {"denied.test", "allow"}, {"metadata.test", "deny"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchReportMode, ARunningProxysModeIsItsPolicysAndLearnContradictingModeIsAUsageError) {
  auto shared = launch(test_subnet(98), {"--mode", "report", "--proxy-control", "/nonexistent.sock", "--", kSh, "-c",
                                         "true"});
  EXPECT_EQ(shared.exit_code, 2) << shared.err;
  EXPECT_THAT(shared.err, HasSubstr("--mode report: only for the embedded proxy")) << shared.err;
  auto both = launch(test_subnet(98), {"--learn", "--mode", "enforce", "--", kSh, "-c", "true"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_THAT(both.err, HasSubstr("--learn is --mode report")) << both.err;
  auto bad = launch(test_subnet(98), {"--mode", "learn", "--", kSh, "-c", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace netbox::launch_test
