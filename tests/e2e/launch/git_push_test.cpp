// git pushes from inside `netbox launch` (issue 28): the agent's own git, in its own
// namespaces and as its own user, pushes over smart HTTP through the launch's proxy to
// Debian's `git http-backend` on the host's loopback (tests/integration/proxy/
// git_http_server.py). The policy lets it push only to refs/heads/agent/*, with no force
// and no delete: the agent's branch moves; a push to main, a deletion and a force-push are
// refused with the reason git prints inside the sandbox, and the host's repository shows
// that nothing else moved. The rows carry the refs.
#include "launch_fixture.hpp"

#include "support/background_process.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// git on the host side, with none of the machine's configuration.
test::RunResult host_git(std::vector<std::string> args) {
  std::vector<std::string> argv{"env", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent", "git",
                                "-c", "user.name=operator", "-c", "user.email=operator@example.test"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = test::run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r;
}

std::string remote_rev(const fs::path& remote, const std::string& ref) {
  auto r = test::run({"git", "--git-dir", remote.string(), "rev-parse", "--verify", "-q", ref});
  return r.exit_code == 0 ? r.out.substr(0, 40) : "";
}

TEST(LaunchGitPush, TheAgentPushesItsBranchButNotMainNorADeletionNorAForcePush) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(74);
  HostDir host;
  const auto root = host.folder("served");
  const auto remote = root / "remote.git";
  const auto work = host.folder("work");
  const auto local = work / "local";
  host_git({"init", "-q", "--bare", "-b", "main", remote.string()});
  host_git({"init", "-q", "-b", "main", local.string()});
  host_git({"-C", local.string(), "commit", "-q", "--allow-empty", "-m", "base"});
  const auto base = host_git({"-C", local.string(), "rev-parse", "HEAD"}).out.substr(0, 40);
  host_git({"-C", local.string(), "push", "-q", remote.string(), "main", "main:refs/heads/agent/x"});
  // The project is the agent's (it runs as nobody); the served repository stays root's.
  ASSERT_EQ(test::run({"chown", "-R", "65534:65534", work.string()}).exit_code, 0);

  const auto git_port = test::free_port();
  test::BackgroundProcess server({"python3", "-B", (test::source_dir() / "tests/integration/proxy/git_http_server.py").string(),
                                  std::to_string(git_port), root.string()},
                                 host.path() / "git-http.log");
  ASSERT_TRUE(test::wait_for_port(git_port)) << server.log();

  auto j = nlohmann::json::parse(policy_json(git_port));
  j["allow"] = {"git.test"};
  j["resolve"] = {{"git.test", {"127.0.0.1"}}};
  j["rules"] = nlohmann::json::parse(R"([
    {"host": "git.test", "methods": ["GET"], "paths": ["/remote.git/info/refs"], "action": "allow"},
    {"host": "git.test", "methods": ["POST"], "paths": ["/remote.git/git-receive-pack"], "action": "allow",
     "git": {"push": ["refs/heads/agent/*"], "force": false, "delete": false}}])");
  test::TempDir dir;
  const auto policy = dir.write("policy.json", j.dump());
  const auto db = dir.path() / "audit.db";

  // Inside: the agent's own git and HOME; the proxy variables the launch sets are all
  // that lead out. Each push prints its exit status after a marker.
  const std::string url = "http://git.test:" + std::to_string(git_port) + "/remote.git";
  const std::string git = "GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 git -c user.name=agent "
                          "-c user.email=agent@example.test ";
  const std::string script =
      "set -u; cd local; " + git + "commit -q --allow-empty -m work; " +
      "echo work=$(git rev-parse HEAD); " +
      git + "push --porcelain " + url + " HEAD:refs/heads/agent/x; echo branch=$?; " +
      git + "push --porcelain " + url + " HEAD:refs/heads/main; echo main=$?; " +
      git + "push --porcelain " + url + " :refs/heads/agent/x; echo delete=$?; " +
      git + "reset -q --hard " + base + "; " + git + "commit -q --allow-empty -m rewritten; " +
      git + "push --porcelain " + url + " +HEAD:refs/heads/agent/x; echo force=$?";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--user", "nobody", "--workdir",
                           work.string(), "--", kSh, "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto out = r.out + r.err;

  const auto at = r.out.find("work=");
  ASSERT_NE(at, std::string::npos) << out;
  const auto work_commit = r.out.substr(at + 5, 40);
  EXPECT_THAT(r.out, HasSubstr("branch=0")) << out;
  EXPECT_EQ(remote_rev(remote, "refs/heads/agent/x"), work_commit) << "the agent's branch moved";

  EXPECT_THAT(r.out, HasSubstr("main=1")) << out;
  EXPECT_THAT(out, HasSubstr("netbox: refs/heads/main is not one of the refs this rule lets the agent push"));
  EXPECT_EQ(remote_rev(remote, "refs/heads/main"), base) << "main did not move";

  EXPECT_THAT(r.out, HasSubstr("delete=1")) << out;
  EXPECT_THAT(out, HasSubstr("git.delete is false"));

  EXPECT_THAT(r.out, HasSubstr("force=1")) << out;
  EXPECT_THAT(out, HasSubstr("not shown to be a fast-forward"));
  EXPECT_EQ(remote_rev(remote, "refs/heads/agent/x"), work_commit) << "neither the deletion nor the force-push landed";

  auto pushes = query(db, "SELECT decision, reason FROM requests WHERE path = '/remote.git/git-receive-pack' ORDER BY id");
  ASSERT_EQ(pushes.size(), 4u) << out;
  EXPECT_EQ(pushes[0][0], "allow");
  EXPECT_THAT(pushes[0][1], HasSubstr("refs/heads/agent/x"));
  EXPECT_EQ(pushes[1][0], "deny");
  EXPECT_THAT(pushes[1][1], HasSubstr("refs/heads/main"));
  EXPECT_EQ(pushes[2][0], "deny");
  EXPECT_THAT(pushes[2][1], HasSubstr("refs/heads/agent/x (delete)"));
  EXPECT_EQ(pushes[3][0], "deny");
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
