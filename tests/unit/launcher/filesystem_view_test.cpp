// How the flags become the agent's filesystem view: what is refused, what is bound in
// which order, which credentials are hidden.
#include "netbox/launcher/filesystem_view.hpp"

#include "netbox/launcher/launch.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>

#include <fstream>
#include <functional>
#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

int exit_code_of(const FilesystemRequest& r, std::string* message = nullptr) {
  DegradedLayers degraded;
  try {
    plan_filesystem_view(r, degraded);
  } catch (const LaunchError& e) {
    if (message) *message = e.what();
    return e.exit_code();
  }
  return 0;
}

FilesystemRequest request_in(const fs::path& cwd) {
  FilesystemRequest r;
  r.cwd = cwd.string();
  r.agent.home = "/nonexistent";
  return r;
}

TEST(FilesystemView, SystemKernelAndAuditFoldersAreNeverWritable) {
  const std::optional<fs::path> db = fs::path("/srv/netbox/audit/audit.db");
  for (const char* p : {"/", "/etc", "/etc/ssh", "/usr", "/usr/local/bin", "/bin", "/sbin", "/lib", "/lib64", "/boot",
                        "/proc", "/proc/sys", "/sys", "/dev", "/srv/netbox/audit", "/srv/netbox", "/srv"})
    EXPECT_THAT(why_not_writable(p, db), Not("")) << p;
  for (const char* p : {"/home/op/project", "/srv/data", "/opt/x", "/var/tmp/x", "/library"})
    EXPECT_EQ(why_not_writable(p, db), "") << p;
}

TEST(FilesystemView, RelativePathsAreResolvedAgainstTheCurrentDirectoryAndBindsAreOrderedParentFirst) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "a" / "b");
  auto r = request_in(dir.path());
  r.ro = {"a/b"};
  r.rw = {"./a"};
  DegradedLayers degraded;
  auto view = plan_filesystem_view(r, degraded);
  const std::string base = fs::canonical(dir.path()).string();
  EXPECT_EQ(view.workdir, base);
  ASSERT_EQ(view.mounts.binds.size(), 3u);
  EXPECT_EQ(view.mounts.binds[0].path, base);
  EXPECT_EQ(view.mounts.binds[1].path, base + "/a");
  EXPECT_TRUE(view.mounts.binds[1].writable);
  EXPECT_EQ(view.mounts.binds[2].path, base + "/a/b");
  EXPECT_FALSE(view.mounts.binds[2].writable);
}

TEST(FilesystemView, ASymlinkGivenIsShownUnderItsOwnNameWithItsTargetsContent) {
  test::TempDir dir;
  dir.write("gitconfig", "x");
  fs::create_symlink("gitconfig", dir.path() / ".gitconfig");
  auto r = request_in(dir.path());
  r.ro = {".gitconfig"};
  r.hide = {".gitconfig"};
  DegradedLayers degraded;
  auto view = plan_filesystem_view(r, degraded);
  const std::string base = fs::canonical(dir.path()).string();
  ASSERT_EQ(view.mounts.binds.size(), 2u);
  EXPECT_EQ(view.mounts.binds[1].path, base + "/.gitconfig");
  EXPECT_EQ(view.mounts.binds[1].source, base + "/gitconfig");
  EXPECT_THAT(view.mounts.hidden, Contains(base + "/gitconfig")) << "the target";
  EXPECT_THAT(view.mounts.hidden, Contains(base + "/.gitconfig")) << "the name, where a bind shows it";
}

TEST(FilesystemView, BadInputIsExit2AndAMissingSourceIs125UnlessAccepted) {
  test::TempDir dir;
  std::string message;
  auto r = request_in(dir.path());
  r.rw = {"/usr"};
  EXPECT_EQ(exit_code_of(r, &message), 2);
  EXPECT_THAT(message, HasSubstr("--rw '/usr'"));
  r = request_in(dir.path());
  r.ro = {""};
  EXPECT_EQ(exit_code_of(r), 2);
  r = request_in(dir.path());
  r.workdir = "/etc";
  EXPECT_EQ(exit_code_of(r), 2);
  r = request_in(dir.path());
  r.ro = {"missing"};
  EXPECT_EQ(exit_code_of(r, &message), 125);
  EXPECT_THAT(message, HasSubstr("--ro 'missing'"));

  DegradedLayers accepted({"ro"});
  auto view = plan_filesystem_view(r, accepted);
  EXPECT_EQ(view.mounts.binds.size(), 1u) << "only the workdir";
  ASSERT_EQ(accepted.notes().size(), 1u);
  EXPECT_THROW(DegradedLayers({"network"}), LaunchError);
}

TEST(FilesystemView, ASystemFolderAsCurrentDirectoryLeavesNoWritableWorkdir) {
  auto r = request_in("/usr");
  DegradedLayers degraded;
  auto view = plan_filesystem_view(r, degraded);
  EXPECT_EQ(view.workdir, "");
  EXPECT_THAT(view.no_workdir_reason, HasSubstr("give --workdir"));
  EXPECT_TRUE(view.mounts.binds.empty());
}

TEST(FilesystemView, CredentialsOfEveryGivenHomeThatExistAreHidden) {
  test::TempDir home;
  fs::create_directories(home.path() / ".ssh");
  home.write(".netrc", "x");
  auto r = request_in(home.path());
  r.workdir = home.path().string();  // HOME is never the workdir unless asked for
  r.agent.home = home.path().string();
  r.secret_homes = {home.path().string(), "/nonexistent"};
  DegradedLayers degraded;
  auto view = plan_filesystem_view(r, degraded);
  const std::string base = fs::canonical(home.path()).string();
  EXPECT_THAT(view.mounts.hidden, Contains(base + "/.ssh"));
  EXPECT_THAT(view.mounts.hidden, Contains(base + "/.netrc"));
  EXPECT_EQ(view.mounts.hidden.size(), 2u) << "those that do not exist have nothing to hide";
  EXPECT_EQ(view.mounts.home, base);
}

TEST(FilesystemView, SharedFoldersAndHomeAreRefusedAsTheImplicitWorkdirAndWarnedAboutWhenGiven) {
  test::TempDir home;
  std::string message;
  for (const std::string& cwd : {std::string("/"), std::string("/tmp"), std::string("/var/tmp"), std::string("/dev/shm"),
                                home.path().string()}) {
    auto r = request_in(cwd);
    r.secret_homes = {home.path().string()};
    EXPECT_EQ(exit_code_of(r, &message), 2) << cwd;
    EXPECT_THAT(message, HasSubstr("give --workdir")) << cwd;
  }
  auto r = request_in(home.path());
  r.secret_homes = {home.path().string()};
  r.workdir = "/tmp";
  DegradedLayers degraded;
  auto view = plan_filesystem_view(r, degraded);
  EXPECT_EQ(view.workdir, fs::canonical("/tmp").string());
  ASSERT_EQ(view.warnings.size(), 1u);
  EXPECT_THAT(view.warnings[0], HasSubstr("shared with every user"));
  r.workdir = home.path().string();
  EXPECT_THAT(plan_filesystem_view(r, degraded).warnings.at(0), HasSubstr("the home folder"));
  test::TempDir project;
  r = request_in(project.path());  // a project folder: no warning
  r.secret_homes = {home.path().string()};
  EXPECT_TRUE(plan_filesystem_view(r, degraded).warnings.empty());
}

TEST(FilesystemView, WhatTheHostRunsInAWritableFolderIsBoundReadOnlyAfterItsGitFolderIsPinned) {
  test::TempDir dir;
  fs::create_directories(dir.path() / ".git" / "modules" / "libs" / "a");
  dir.write(".git/config", "[core]\n");
  dir.write(".git/HEAD", "ref: refs/heads/main\n");
  dir.write(".git/modules/libs/a/HEAD", "ref: refs/heads/main\n");
  dir.write(".envrc", "x");
  auto r = request_in(dir.path());
  DegradedLayers degraded;
  const auto view = plan_filesystem_view(r, degraded);
  const std::string base = fs::canonical(dir.path()).string();
  std::vector<std::string> read_only, pinned, made;
  for (const auto& b : view.mounts.binds) {
    if (b.pin) pinned.push_back(b.path);
    else if (!b.writable) read_only.push_back(b.path);
    if (b.make_missing) made.push_back(b.path);
  }
  EXPECT_EQ(pinned, (std::vector<std::string>{base + "/.git", base + "/.git/modules/libs/a"}));
  EXPECT_THAT(read_only, Contains(base + "/.git/config"));
  EXPECT_THAT(read_only, Contains(base + "/.git/hooks"));
  EXPECT_THAT(read_only, Contains(base + "/.git/info"));
  EXPECT_THAT(read_only, Contains(base + "/.git/modules/libs/a/hooks"));
  EXPECT_THAT(read_only, Contains(base + "/.envrc"));
  EXPECT_THAT(read_only, Not(Contains(base + "/.vscode"))) << "it does not exist";
  EXPECT_THAT(made, Contains(base + "/.git/hooks"));
  // The pin comes before what is bound inside it.
  auto at = [&](const std::string& p) {
    for (std::size_t i = 0; i < view.mounts.binds.size(); ++i)
      if (view.mounts.binds[i].path == p) return i;
    return view.mounts.binds.size();
  };
  EXPECT_LT(at(base + "/.git"), at(base + "/.git/config"));
  r.writable_hooks = true;
  EXPECT_EQ(plan_filesystem_view(r, degraded).mounts.binds.size(), 1u) << "only the workdir";
}

// A link an earlier agent left where netbox protects what the host runs would be bound at
// its target: a host folder shown in this launch's view (the user's /run/user/UID, its
// D-Bus and ssh-agent sockets), or a missing folder made there by root. Refused, naming it.
TEST(FilesystemView, AProtectedPathLeadingOutOfTheWritableFolderIsRefused) {
  test::TempDir outside;
  fs::create_directories(outside.path() / "secret");
  const std::string target = fs::canonical(outside.path() / "secret").string();
  struct Planted {
    const char* what;
    std::function<void(const fs::path&)> plant;
  };
  const std::vector<Planted> planted{
      {".vscode", [&](const fs::path& w) { fs::create_directory_symlink(target, w / ".vscode"); }},
      {".envrc",
       [&](const fs::path& w) {
         std::ofstream(target + "/envrc") << "x";
         fs::create_symlink(target + "/envrc", w / ".envrc");
       }},
      {"a submodule's info",
       [&](const fs::path& w) {
         fs::create_directories(w / ".git/modules/x");
         std::ofstream(w / ".git/modules/x/HEAD") << "ref: refs/heads/main\n";
         fs::create_directory_symlink(target, w / ".git/modules/x/info");
       }},
      {"a hooksPath through a link",
       [&](const fs::path& w) {
         fs::create_directories(w / ".git");
         std::ofstream(w / ".git/config") << "[core]\n\thooksPath = lnk/made-by-root\n";
         fs::create_directory_symlink(target, w / "lnk");
       }},
  };
  for (const auto& p : planted) {
    SCOPED_TRACE(p.what);
    test::TempDir dir;
    p.plant(dir.path());
    std::string message;
    EXPECT_EQ(exit_code_of(request_in(dir.path()), &message), 2);
    EXPECT_THAT(message, HasSubstr("outside " + fs::canonical(dir.path()).string()));
    EXPECT_THAT(message, HasSubstr(target));
    auto writable_hooks = request_in(dir.path());
    writable_hooks.writable_hooks = true;
    EXPECT_EQ(exit_code_of(writable_hooks), 0) << "nothing is protected, nothing bound";
  }
}

// git takes config and hooks from the folder commondir names: a linked worktree's.
TEST(FilesystemView, ALinkedWorktreesCommondirIsBoundReadOnly) {
  test::TempDir dir;
  fs::create_directories(dir.path() / ".git/worktrees/feature");
  dir.write(".git/HEAD", "ref: refs/heads/main\n");
  dir.write(".git/worktrees/feature/HEAD", "ref: refs/heads/feature\n");
  dir.write(".git/worktrees/feature/commondir", "../..\n");
  DegradedLayers degraded;
  const auto view = plan_filesystem_view(request_in(dir.path()), degraded);
  std::vector<std::string> read_only;
  for (const auto& b : view.mounts.binds)
    if (!b.writable && !b.pin) read_only.push_back(b.path);
  EXPECT_THAT(read_only, Contains(fs::canonical(dir.path()).string() + "/.git/worktrees/feature/commondir"));
}

}  // namespace
}  // namespace netbox::launcher
