// Which host folder the agent may write (issue 22, 13 and 15): a launch from /tmp, /,
// or HOME without --workdir is refused before anything runs (the agent would write the
// machine's shared folders or the dotfiles the host runs); the same folders given
// explicitly are taken with a warning; and a workdir the agent's user cannot write (a
// root-owned project, the default user) is reported as not writable, never as writable.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <pwd.h>
#include <sys/stat.h>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// `netbox launch ARGS` started from `cwd` without sudo's variables, so that the default
// agent user is the one a root shell gets.
test::RunResult launch_from(const fs::path& cwd, const Subnet& subnet, const std::vector<std::string>& args) {
  std::string line = "cd '" + cwd.string() + "' && exec env -u SUDO_UID -u SUDO_GID -u SUDO_USER '" +
                     test::netbox_binary().string() + "' launch --subnet " + subnet.cidr;
  for (const auto& a : args) line += " '" + a + "'";
  return test::run({kSh, "-c", line});
}

std::string root_home() {
  const struct passwd* pw = ::getpwuid(0);
  return pw ? pw->pw_dir : "/root";
}

TEST(LaunchWorkdirSafety, SharedFoldersAndHomeAreNeverAnImplicitWorkdir) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(135);
  const std::string marker = "/tmp/nbx-implicit-workdir-" + std::to_string(::getpid());
  for (const std::string& cwd : {std::string("/tmp"), std::string("/var/tmp"), std::string("/"), root_home()}) {
    auto r = launch_from(cwd, subnet, {"--", kSh, "-c", "touch " + marker});
    EXPECT_EQ(r.exit_code, 2) << cwd << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--workdir")) << cwd;
    EXPECT_FALSE(fs::exists(marker)) << "the agent ran from " << cwd;
    fs::remove(marker);
    auto explain = launch_from(cwd, subnet, {"--explain", "--", "true"});
    EXPECT_EQ(explain.exit_code, 2) << cwd << ": " << explain.out;
  }
  // Given explicitly, it is the user's choice: taken, with a warning on stderr.
  HostDir host;
  const auto db = host.folder("db", fs::perms(0700)) / "a.db";  // outside the workdir /tmp
  auto given = launch_from(host.path(), subnet, {"--audit-db", db.string(), "--workdir", "/tmp",
                                                 "--", kSh, "-c", "test -w /tmp && echo writable"});
  EXPECT_EQ(given.exit_code, 0) << given.err;
  EXPECT_THAT(given.out, HasSubstr("writable"));
  EXPECT_THAT(given.err, HasSubstr("warning: --workdir /tmp is /tmp, shared with every user"));
  expect_nothing_left(subnet);
}

TEST(LaunchWorkdirSafety, ARootOwnedProjectIsNotCalledWritableForTheDefaultUser) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(136);
  HostDir host;
  const auto project = host.folder("project");  // root's, 0755: the README's walk-through run as root
  test::TempDir db;
  const std::vector<std::string> common = {"--audit-db", (db.path() / "a.db").string()};

  auto text = launch_from(project, subnet, {"--explain", "--", "true"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("workdir: " + project.string() + " (read-write mount, NOT writable by the agent's user"));
  EXPECT_THAT(text.out, HasSubstr("writable: nothing on the host\n"));
  EXPECT_THAT(text.out, HasSubstr("not writable by the agent's user: " + project.string() + " (owner uid 0"));
  EXPECT_THAT(text.out, HasSubstr("--user NAME"));
  auto json = launch_from(project, subnet, {"--explain", "--format", "json", "--", "true"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["workdir_writable"], false);
  EXPECT_TRUE(j["writable"].empty());

  // The banner of a real launch says the same, and the agent indeed cannot write there.
  auto args = common;
  args.insert(args.end(), {"--", kSh, "-c", "touch made 2>/dev/null && echo WROTE || echo DENIED"});
  auto run = launch_from(project, subnet, args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("DENIED"));
  EXPECT_THAT(run.err, HasSubstr("(NOT writable by the agent's user); read-only root, 0 writable"));
  EXPECT_THAT(run.err, HasSubstr("warning: the agent's user"));
  // Its uid is leased only as it runs: the warning names none, never one it does not run as.
  EXPECT_THAT(run.err, HasSubstr("netbox-agent (a uid of its own for this launch) cannot write"));

  // A user who can write it gets it writable, and the report says so.
  auto as_root = launch_from(project, subnet, {"--explain", "--user", "root", "--", "true"});
  ASSERT_EQ(as_root.exit_code, 0) << as_root.err;
  EXPECT_THAT(as_root.out, HasSubstr("writable: " + project.string() + "\n"));
  EXPECT_THAT(as_root.out, Not(HasSubstr("NOT writable")));
  expect_nothing_left(subnet);
}

// The check is an access(2) as the agent's user (a vfork that switches uid; B6), not the
// mode bits: a folder anyone may write, inside a folder only root may search, is still
// not writable for the agent, and one it can reach is called writable.
TEST(LaunchWorkdirSafety, WritableIsAskedAsTheAgentsUserNotReadFromTheModeBits) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(160);
  HostDir host;
  const auto open_project = host.folder("open", fs::perms(0777));
  const auto closed_parent = host.folder("closed", fs::perms(0700));
  const auto hidden_project = host.folder("closed/open", fs::perms(0777));

  auto reachable = launch_from(open_project, subnet, {"--explain", "--", "true"});
  ASSERT_EQ(reachable.exit_code, 0) << reachable.err;
  EXPECT_THAT(reachable.out, HasSubstr("writable: " + open_project.string() + "\n"));
  EXPECT_THAT(reachable.out, Not(HasSubstr("NOT writable")));

  auto unreachable = launch_from(hidden_project, subnet, {"--explain", "--", "true"});
  ASSERT_EQ(unreachable.exit_code, 0) << unreachable.err;
  EXPECT_THAT(unreachable.out, HasSubstr("not writable by the agent's user: " + hidden_project.string()));
  EXPECT_THAT(unreachable.out, HasSubstr("writable: nothing on the host\n"));
  (void)closed_parent;
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
