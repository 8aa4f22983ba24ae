// Files of the project that the developer's own tools run on the host (issue 22, 14):
// git hooks and config (of submodules too), .git/info/attributes, .envrc, .vscode. The
// agent tries to plant or change each, to swap .git for its own, and to get a hook
// copied back by --commit; it fails every time, while git commit still works inside.
// With --writable-hooks it can.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <fstream>
#include <sstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A git project with a submodule's git folder, an .envrc and a .vscode folder.
fs::path make_project(const HostDir& host) {
  const fs::path p = host.folder("project");
  auto git = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"git", "-C", p.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = test::run(argv);
    if (r.exit_code != 0) throw std::runtime_error("git: " + r.err);
  };
  git({"init", "-q"});
  fs::remove_all(p / ".git/hooks");  // as some tools leave it: hooks/ must not be creatable
  std::ofstream(p / "file.txt") << "one\n";
  std::ofstream(p / ".envrc") << "export A=1\n";
  fs::create_directories(p / ".vscode");
  std::ofstream(p / ".vscode/tasks.json") << "{}\n";
  fs::create_directories(p / ".git/modules/sub/hooks");
  std::ofstream(p / ".git/modules/sub/HEAD") << "ref: refs/heads/main\n";
  std::ofstream(p / ".git/modules/sub/config") << "[core]\n";
  // Hooks kept elsewhere, as husky does (.husky/_, which git ignores).
  fs::create_directories(p / ".husky/_");
  std::ofstream(p / ".husky/_/h") << "#!/bin/sh\n";
  git({"config", "core.hooksPath", ".husky/_"});
  git({"add", "file.txt"});
  git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one"});
  return p;
}

// A launch as root in `workdir`, its store in `db`, then `more` (the command after "--").
std::vector<std::string> as_root_in(const fs::path& workdir, const test::TempDir& db,
                                    const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"--audit-db", (db.path() / "a.db").string(), "--user", "root", "--workdir",
                                   workdir.string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Each attempt prints "OK what" or "NO what"; then a commit inside.
const std::string kAttack = R"(
try() { what=$1; shift; if ( "$@" ) 2>/dev/null; then echo "OK $what"; else echo "NO $what"; fi; }
try hook sh -c 'mkdir -p .git/hooks && echo "touch /pwned" > .git/hooks/pre-commit'
try config sh -c 'printf "[core]\n\tfsmonitor = touch /pwned\n" >> .git/config'
try attributes sh -c 'mkdir -p .git/info && echo "* filter=x" > .git/info/attributes'
try envrc sh -c 'echo "touch /pwned" > .envrc'
try vscode sh -c 'echo "{\"tasks\":[]}" > .vscode/tasks.json'
try subhook sh -c 'echo "touch /pwned" > .git/modules/sub/hooks/post-checkout'
try subconfig sh -c 'echo "[core]" >> .git/modules/sub/config'
try hookspath sh -c 'echo "touch /pwned" >> .husky/_/h'
[ -n "$KEEP_GIT" ] || try swapgit sh -c 'mv .git .git-old'
try rmconfig sh -c 'rm -f .git/config'
echo two > file.txt
try commit git -c user.name=a -c user.email=a@a commit -q -am two
)";

TEST(LaunchHostExecuted, TheAgentCannotPlantWhatTheHostRunsButCanCommit) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(137);
  HostDir host;
  const fs::path p = make_project(host);
  const std::string config_before = slurp(p / ".git/config");
  test::TempDir db;
  const std::vector<std::string> base = as_root_in(p, db);

  auto explain_args = base;
  explain_args.insert(explain_args.end(), {"--explain", "--", "true"});
  auto explain = launch(subnet, explain_args);
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  for (const char* listed : {"/.git/config", "/.git/hooks", "/.git/info", "/.envrc", "/.vscode",
                             "/.git/modules/sub/hooks", "/.git/modules/sub/config", "/.husky/_"})
    EXPECT_THAT(explain.out, HasSubstr(p.string() + listed + " (run by the host")) << listed;

  auto args = base;
  args.insert(args.end(), {"--", kSh, "-c", kAttack});
  auto r = launch(subnet, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* what : {"hook", "config", "attributes", "envrc", "vscode", "subhook", "subconfig", "hookspath",
                           "swapgit", "rmconfig"})
    EXPECT_THAT(r.out, HasSubstr(std::string("NO ") + what + "\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("OK commit\n"));
  EXPECT_FALSE(fs::exists(p / ".git/hooks/pre-commit"));
  EXPECT_TRUE(fs::is_directory(p / ".git/hooks")) << "made so that it could be bound read-only";
  EXPECT_EQ(slurp(p / ".git/config"), config_before);
  EXPECT_EQ(slurp(p / ".envrc"), "export A=1\n");
  EXPECT_TRUE(fs::is_directory(p / ".git"));
  EXPECT_EQ(test::run({"git", "-C", p.string(), "log", "--format=%s", "-1"}).out, "two\n");

  // Through an overlay with --commit: nothing planted comes back either.
  auto overlay = base;
  overlay.insert(overlay.end(), {"--workdir-quota", "64M", "--commit", "--", kSh, "-c", kAttack});
  auto o = launch(subnet, overlay);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("NO hook\n"));
  EXPECT_THAT(o.out, HasSubstr("NO swapgit\n"));
  EXPECT_FALSE(fs::exists(p / ".git/hooks/pre-commit"));
  EXPECT_EQ(slurp(p / ".git/config"), config_before);
  EXPECT_TRUE(fs::exists(p / ".git/config"));

  // The opt-out: an agent trusted with the repository's configuration.
  auto opt_out = base;
  opt_out.insert(opt_out.end(), {"--writable-hooks", "--env", "KEEP_GIT=1", "--", kSh, "-c", kAttack});
  auto w = launch(subnet, opt_out);
  EXPECT_EQ(w.exit_code, 0) << w.err;
  for (const char* what : {"hook", "config", "attributes", "envrc", "vscode", "subhook"})
    EXPECT_THAT(w.out, HasSubstr(std::string("OK ") + what + "\n")) << w.out;
  EXPECT_TRUE(fs::exists(p / ".git/hooks/pre-commit"));
  expect_nothing_left(subnet);
}

// An agent leaves a link where netbox protects what the host runs, leading to a host
// folder of its choosing (/run/user/UID and its D-Bus socket, in the attack that found
// this): the next launch in the folder would have bound that folder into its view, as
// root. It is refused instead, naming the link, and its agent never starts.
TEST(LaunchHostExecuted, ALinkLeftByAnEarlierAgentOutOfTheProjectRefusesTheNextLaunch) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(75);
  HostDir host;
  const fs::path p = make_project(host);
  const fs::path elsewhere = host.folder("elsewhere");
  test::TempDir db;
  const std::vector<std::string> base = as_root_in(p, db);
  auto plant = base;
  plant.insert(plant.end(), {"--", kSh, "-c", "ln -s " + elsewhere.string() + " .direnv && echo PLANTED"});
  auto first = launch(subnet, plant);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_THAT(first.out, HasSubstr("PLANTED"));
  auto next = base;
  next.insert(next.end(), {"--", kSh, "-c", "echo RAN"});
  auto second = launch(subnet, next);
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_THAT(second.err, HasSubstr((p / ".direnv").string() + " leads to " + elsewhere.string()));
  EXPECT_THAT(second.out, Not(HasSubstr("RAN")));
  expect_nothing_left(subnet);
}

// A main repository's .git has no commondir, so none can be bound read-only; one the agent
// makes (naming a folder of its own whose config runs core.fsmonitor at the host's next
// git status) is set aside when the agent is gone, and the launch says so.
TEST(LaunchHostExecuted, ACommondirTheAgentMadeIsSetAsideBeforeTheHostsGitRuns) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(76);
  HostDir host;
  const fs::path p = make_project(host);
  test::TempDir db;
  auto r = launch(subnet, as_root_in(p, db, {"--", kSh, "-c",
                           "mkdir .git/c && cp -r .git/objects .git/refs .git/c/ && "
                           "printf '[core]\\n\\tfsmonitor = \"touch pwned\"\\n' > .git/c/config && "
                           "echo c > .git/commondir && echo MADE"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(r.out, HasSubstr("MADE"));
  EXPECT_FALSE(fs::exists(p / ".git/commondir"));
  EXPECT_THAT(r.err, HasSubstr("the agent made " + (p / ".git/commondir").string()));
  bool kept = false;
  for (const auto& e : fs::directory_iterator(p / ".git"))
    kept = kept || e.path().filename().string().starts_with("commondir.netbox-");
  EXPECT_TRUE(kept) << "set aside, for the user to look at";
  EXPECT_EQ(test::run({"git", "-C", p.string(), "status", "--short"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(p / "pwned")) << "the host's git ran the agent's fsmonitor";
  expect_nothing_left(subnet);
}

// A linked worktree's .git is a file naming its git folder: swapped for a folder of the
// agent's, its config (core.fsmonitor) would run at the host's next git status. Bound
// read-only, it cannot be (found by a review of issue 22's first version).
TEST(LaunchHostExecuted, ALinkedWorktreesGitFileCannotBeSwapped) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(128);
  HostDir host;
  const fs::path p = make_project(host);
  const fs::path wt = host.path() / "worktree";
  ASSERT_EQ(test::run({"git", "-C", p.string(), "worktree", "add", "-q", wt.string()}).exit_code, 0);
  const std::string git_file = slurp(wt / ".git");
  ASSERT_THAT(git_file, HasSubstr("gitdir:"));
  test::TempDir db;
  auto r = launch(subnet, as_root_in(wt, db, {"--", kSh, "-c",
                           "if (rm -f .git && mkdir .git) 2>/dev/null; then echo SWAPPED; else echo KEPT; fi"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("KEPT"));
  EXPECT_EQ(slurp(wt / ".git"), git_file);
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
