// What the embedded proxy says about the agent's requests, and where: by default only the
// refusals reach the terminal (what the person at it must act on), --quiet says nothing,
// and --log-file puts every line into a file of the launcher's that the agent can neither
// read nor touch, so it cannot forge or erase what the proxy recorded of it.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}

// One allowed and one denied request, each with a path that names it in the log.
std::vector<std::string> two_requests(const HttpServer& upstream, std::vector<std::string> flags) {
  const std::string port = std::to_string(upstream.port());
  std::string agent = std::string(kCurl) + " -s -o /dev/null http://allowed.test:" + port + "/allowed-one; " + kCurl +
                      " -s -o /dev/null http://denied.test:" + port + "/denied-one; true";
  flags.insert(flags.end(), {"--", kSh, "-c", agent});
  return flags;
}

TEST(LaunchProxyLog, ByDefaultOnlyRefusalsReachStderr) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(152);
  HttpServer upstream;
  test::TempDir dir;
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  auto r = launch(subnet, two_requests(upstream, {"--policy", policy.string(), "--audit-db",
                                                  (dir.path() / "a.db").string()}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/denied-one"));
  EXPECT_THAT(r.err, Not(HasSubstr("/allowed-one")));
  // Both are in the audit store whatever the log shows.
  EXPECT_EQ(query(dir.path() / "a.db", "SELECT path FROM requests ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/allowed-one"}, {"/denied-one"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchProxyLog, QuietSaysNothingAndLogFileGetsEveryLineOutOfTheAgentsReach) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(153);
  HttpServer upstream;
  test::TempDir dir;
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  auto quiet = launch(subnet, two_requests(upstream, {"--quiet", "--policy", policy.string(), "--audit-db",
                                                      (dir.path() / "a.db").string()}));
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_THAT(quiet.err, Not(HasSubstr("-one")));

  HostDir host;
  const auto log = host.path() / "proxy.log";
  const std::string port = std::to_string(upstream.port());
  // The agent tries to read, truncate and forge the log file it is told the path of.
  // Each attempt in a subshell: a failed redirection must not end the agent's shell.
  const std::string attack = std::string(kCurl) + " -s -o /dev/null http://allowed.test:" + port + "/allowed-one; " +
                             kCurl + " -s -o /dev/null http://denied.test:" + port + "/denied-one; " + "(cat " +
                             log.string() + ") >/dev/null 2>&1 && echo AGENT-READ; (: > " + log.string() +
                             ") 2>/dev/null && echo AGENT-TRUNCATED; (echo 'request agent=forged' >> " + log.string() +
                             ") 2>/dev/null && echo AGENT-WROTE; true";
  auto logged = launch(subnet, {"--log-file", log.string(), "--policy", policy.string(), "--audit-db",
                                (dir.path() / "b.db").string(), "--", kSh, "-c", attack});
  EXPECT_EQ(logged.exit_code, 0) << logged.err;
  EXPECT_THAT(logged.out, Not(HasSubstr("AGENT-"))) << logged.out;
  EXPECT_THAT(logged.err, Not(HasSubstr("-one")));
  const std::string text = slurp(log);
  EXPECT_THAT(text, HasSubstr("/allowed-one"));
  EXPECT_THAT(text, HasSubstr("/denied-one"));
  EXPECT_THAT(text, Not(HasSubstr("forged")));
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  expect_nothing_left(subnet);
}

TEST(LaunchProxyLog, LogFlagsAreForTheEmbeddedProxyOnly) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(149);
  test::TempDir dir;
  auto r = launch(subnet, {"--proxy-control", (dir.path() / "none.sock").string(), "--log-file",
                           (dir.path() / "x.log").string(), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--log-file"));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
