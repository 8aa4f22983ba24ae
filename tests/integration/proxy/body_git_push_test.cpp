// git pushes through the proxy (issue 28): real `git push` over smart HTTP to Debian's
// `git http-backend` (a small Python CGI server on loopback), through the proxy's plain
// HTTP door, with a rule that lets the agent push only to refs/heads/agent/*, no force,
// no delete. The ref updates are read from the push's pkt-lines before anything goes
// upstream; a refused push is answered in git's protocol, so git prints the reason, and
// the remote ref is unchanged.
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;

class GitPushTest : public ProxyTest {
 protected:
  GitPushTest() : git_port(free_port()) {
    std::filesystem::create_directories(dir.path() / "home");
    std::filesystem::create_directories(dir.path() / "root");
    git({"init", "-q", "--bare", "-b", "main", remote()});
    git({"init", "-q", "-b", "main", local()});
    base = commit("base");
    git({"-C", local(), "push", "-q", remote(), "main", "main:refs/heads/agent/x"});
    server.emplace(std::vector<std::string>{"python3", "-B", (source_dir() / "tests/integration/proxy/git_http_server.py").string(),
                                            std::to_string(git_port), (dir.path() / "root").string()},
                   dir.path() / "git-http.log");
    EXPECT_TRUE(wait_for_port(git_port)) << server->log();
    auto j = nlohmann::json::parse(base_policy());
    j["allow"].push_back("git.test");
    j["resolve"]["git.test"] = {"127.0.0.1"};
    j["ports"] = {git_port};
    j["rules"] = nlohmann::json::parse(R"([
      {"host": "git.test", "methods": ["GET"], "paths": ["/remote.git/info/refs"], "action": "allow"},
      {"host": "git.test", "methods": ["POST"], "paths": ["/remote.git/git-receive-pack"], "action": "allow",
       "git": {"push": ["refs/heads/agent/*"], "force": false, "delete": false}}])");
    start_proxy(j.dump());
  }

  std::string remote() const { return (dir.path() / "root" / "remote.git").string(); }
  std::string local() const { return (dir.path() / "local").string(); }
  std::string url() const { return "http://git.test:" + std::to_string(git_port) + "/remote.git"; }

  // git with no user or system configuration of the machine, and no proxy but netbox's.
  RunResult git(std::vector<std::string> args, bool must = true) {
    std::vector<std::string> argv{"env", "-u", "http_proxy", "-u", "https_proxy", "-u", "no_proxy", "-u", "NO_PROXY",
                                  "-u", "ALL_PROXY", "HOME=" + (dir.path() / "home").string(),
                                  "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "git",
                                  "-c", "user.name=agent", "-c", "user.email=agent@example.test"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv);
    if (must) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return r;
  }
  std::string commit(const std::string& message) {
    git({"-C", local(), "commit", "-q", "--allow-empty", "-m", message});
    return rev("HEAD");
  }
  std::string rev(const std::string& name) { return git({"-C", local(), "rev-parse", name}).out.substr(0, 40); }
  std::string remote_rev(const std::string& ref) {
    auto r = git({"--git-dir", remote(), "rev-parse", "--verify", "-q", ref}, false);
    return r.exit_code == 0 ? r.out.substr(0, 40) : "";
  }
  RunResult push(std::vector<std::string> refspecs) {
    std::vector<std::string> args{"-C", local(), "-c", "http.proxy=http://127.0.0.1:" + std::to_string(port), "push",
                                  "--porcelain", url()};
    args.insert(args.end(), refspecs.begin(), refspecs.end());
    return git(args, false);
  }

  unsigned short git_port;
  std::string base;
  std::optional<BackgroundProcess> server;
};

TEST_F(GitPushTest, APushToAnAgentBranchGoesThrough) {
  const auto next = commit("work");
  auto r = push({"HEAD:refs/heads/agent/x"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(remote_rev("refs/heads/agent/x"), next);
  EXPECT_THAT(last_row().reason, HasSubstr("the push's ref updates: refs/heads/agent/x"));
  auto created = push({"HEAD:refs/heads/agent/new"});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  EXPECT_EQ(remote_rev("refs/heads/agent/new"), next);
  EXPECT_THAT(last_row().reason, HasSubstr("the push's ref updates: refs/heads/agent/new (create)"));
}

TEST_F(GitPushTest, APushToMainIsRefusedWithTheReasonGitPrintsAndMainIsUnchanged) {
  commit("work");
  auto r = push({"HEAD:refs/heads/main"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("netbox: refs/heads/main is not one of the refs this rule lets the agent push"));
  EXPECT_EQ(remote_rev("refs/heads/main"), base);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_THAT(row.reason, HasSubstr("refs/heads/main"));
}

TEST_F(GitPushTest, ADeletionIsRefusedAndTheRefStays) {
  auto r = push({":refs/heads/agent/x"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("git.delete is false"));
  EXPECT_THAT(last_row().reason, HasSubstr("the push's ref updates: refs/heads/agent/x (delete)"));
  EXPECT_EQ(remote_rev("refs/heads/agent/x"), base);
}

TEST_F(GitPushTest, AForcePushIsRefusedAndTheRefStays) {
  const auto ahead = commit("ahead");
  ASSERT_EQ(push({"HEAD:refs/heads/agent/x"}).exit_code, 0);
  // A history that does not descend from what the remote has.
  git({"-C", local(), "reset", "-q", "--hard", base});
  const auto other = commit("rewritten");
  ASSERT_NE(other, ahead);
  auto r = push({"+HEAD:refs/heads/agent/x"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("not shown to be a fast-forward"));
  EXPECT_EQ(remote_rev("refs/heads/agent/x"), ahead);
}

}  // namespace
}  // namespace netbox::test
