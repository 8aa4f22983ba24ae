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
  EXPECT_THAT(r.err, HasSubstr("netbox: refused GET denied.test:" + std::to_string(upstream.port()) + "/denied-one: "));
  EXPECT_THAT(r.err, Not(HasSubstr("/allowed-one")));
  // The proxy's lifecycle is no business of the terminal's (--log-file has it).
  for (const char* lifecycle : {"listening", "connection_limits", "agent_registered", "listener_closed", "stopped"})
    EXPECT_THAT(r.err, Not(HasSubstr(lifecycle))) << r.err;
  // One line at exit: how it ended, the counts, and the command that lists them.
  EXPECT_THAT(r.err, testing::ContainsRegex("netbox launch: sh-[0-9a-f]+ exited 0 after [0-9]+m?s; 1 requests allowed, 1 "
                                            "refused: netbox audit --db " + (dir.path() / "a.db").string() +
                                            " --agent sh-[0-9a-f]+\n$"));
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
  EXPECT_THAT(logged.err, HasSubstr("/denied-one")) << "the refusals reach the terminal with --log-file too";
  EXPECT_THAT(logged.err, Not(HasSubstr("/allowed-one")));
  EXPECT_THAT(logged.err, Not(HasSubstr("listening")));
  const std::string text = slurp(log);
  EXPECT_THAT(text, HasSubstr(R"("event":"listening")")) << "the lifecycle lines go to the file";
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

// With -q the terminal shows the agent's output and nothing else: no banner, no proxy
// line, no refusal, no summary. Driven through a pseudo-terminal, as a person runs it.
TEST(LaunchProxyLog, QuietPrintsNothingButTheAgentsOutputOnATerminal) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(88);
  HttpServer upstream;
  test::TempDir dir;
  HostDir host;
  const auto work = host.folder("work");
  ASSERT_EQ(::chown(work.c_str(), 65534, 65534), 0);  // --user nobody may write it: no warning
  const auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const std::string port = std::to_string(upstream.port());
  const std::string agent = "echo AGENT-SAYS-HELLO; " + std::string(kCurl) + " -s -o /dev/null http://allowed.test:" +
                            port + "/a; " + kCurl + " -s -o /dev/null http://denied.test:" + port + "/d; echo AGENT-DONE";
  const std::string driver = R"(
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
buf = b""
while True:
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    buf += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(repr(buf.decode(errors="replace")) + "\n")
print("exit", os.waitstatus_to_exitcode(st))
)";
  auto r = test::run({kPython, "-c", driver, test::netbox_binary().string(), "launch", "-q", "--subnet", subnet.cidr,
                      "--user", "nobody", "--workdir", work.string(), "--policy", policy.string(), "--audit-db",
                      (dir.path() / "a.db").string(), "--", kSh, "-c", agent});
  EXPECT_EQ(r.out, "'AGENT-SAYS-HELLO\\r\\nAGENT-DONE\\r\\n'\nexit 0\n") << r.err;
  EXPECT_EQ(query(dir.path() / "a.db", "SELECT path || ' ' || decision FROM requests ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/a allow"}, {"/d deny"}}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
