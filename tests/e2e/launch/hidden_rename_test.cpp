// netbox's own files stay hidden whatever the host does meanwhile (issue 22, 7): a mount
// on the policy file itself went away when the host saved a new version by a rename
// (an editor, configuration management), and the running agent read the new policy in
// full. The agent here reads the policy's path in a loop while the host replaces it.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <fstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// The README's layout: the policy beside the project folder, which is the workdir, so
// the policy's folder is one the agent needs and cannot simply be covered.
TEST(LaunchHiddenRename, APolicyReplacedByRenameOnTheHostIsNeverReadable) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(138);
  HostDir host;
  const fs::path project = host.folder("project");
  const fs::path policy = host.file("policy.json", R"({"version": 1, "allow": ["first-version.test"]})");
  host.file("notes.txt", "beside the policy\n");
  test::TempDir db;
  const std::string agent = "cat " + (host.path() / "notes.txt").string() + "; touch ready; " +
                            "until [ -e renamed ]; do cat " + policy.string() + " 2>/dev/null; done; " +
                            "for i in 1 2 3; do cat " + policy.string() + " 2>/dev/null; done; " +
                            "ls " + host.path().string() + "; echo end > done";
  Background launched({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       (db.path() / "a.db").string(), "--user", "root", "--policy", policy.string(), "--workdir",
                       project.string(), "--", kSh, "-c", agent},
                      db.path(), "launch");
  ASSERT_TRUE(eventually([&] { return fs::exists(project / "ready"); })) << launched.err();
  // As an editor saves: a new file beside it, renamed over the old one.
  {
    std::ofstream(host.path() / ".policy.json.tmp") << R"({"version": 1, "allow": ["second-version.test"]})";
  }
  fs::rename(host.path() / ".policy.json.tmp", policy);
  std::ofstream(project / "renamed") << "x";
  EXPECT_EQ(launched.wait(), 0) << launched.err();
  EXPECT_EQ(std::ifstream(project / "done").good(), true) << launched.err();
  const std::string out = launched.out();
  EXPECT_THAT(out, Not(HasSubstr("version"))) << "the agent read the policy:\n" << out;
  EXPECT_THAT(out, HasSubstr("beside the policy")) << "the folder's other entries are still shown";
  EXPECT_THAT(out, HasSubstr("project\n"));
  EXPECT_THAT(out, Not(HasSubstr("policy.json")));
  expect_nothing_left(subnet);
}

// A Kubernetes ConfigMap's layout: policy.json -> ..data/policy.json, ..data -> ..v1; the
// host publishes a new version as ..v2 and swaps ..data. Covering the folder the path
// resolved to (..v1) left ..v2 in sight (found by a review of issue 22's first version):
// the folder the path names is covered too.
TEST(LaunchHiddenRename, APolicyBehindASymlinkSwappedOnTheHostIsNeverReadable) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(129);
  HostDir host;
  const fs::path project = host.folder("project");
  const fs::path conf = host.folder("conf");
  host.folder("conf/..v1");
  host.file("conf/..v1/policy.json", R"({"version": 1, "allow": ["first-version.test"]})");
  fs::create_directory_symlink("..v1", conf / "..data");
  fs::create_symlink("..data/policy.json", conf / "policy.json");
  test::TempDir db;
  const std::string agent = "touch ready; until [ -e swapped ]; do :; done; cat " + (conf / "..v2/policy.json").string() +
                            " " + (conf / "policy.json").string() + " 2>&1; ls -a " + conf.string() + " 2>&1; echo end";
  Background launched({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       (db.path() / "a.db").string(), "--user", "root", "--policy", (conf / "policy.json").string(),
                       "--workdir", project.string(), "--", kSh, "-c", agent},
                      db.path(), "launch");
  ASSERT_TRUE(eventually([&] { return fs::exists(project / "ready"); })) << launched.err();
  // As kubelet publishes a new version: a new folder, then ..data swapped by a rename.
  host.folder("conf/..v2");
  host.file("conf/..v2/policy.json", R"({"version": 1, "allow": ["second-version.test"]})");
  fs::create_directory_symlink("..v2", conf / "..data_tmp");
  fs::rename(conf / "..data_tmp", conf / "..data");
  std::ofstream(project / "swapped") << "x";
  EXPECT_EQ(launched.wait(), 0) << launched.err();
  const std::string out = launched.out();
  EXPECT_THAT(out, HasSubstr("end"));
  EXPECT_THAT(out, Not(HasSubstr("version"))) << "the agent read a policy:\n" << out;
  expect_nothing_left(subnet);
}

TEST(LaunchHiddenRename, APolicyTheAgentCouldReplaceIsRefused) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(139);
  HostDir host;
  const fs::path project = host.folder("project");
  host.folder("project/conf");
  const fs::path policy = host.file("project/conf/policy.json", R"({"version": 1, "allow": ["a.test"]})");
  test::TempDir db;
  auto r = launch(subnet, {"--audit-db", (db.path() / "a.db").string(), "--policy", policy.string(), "--workdir",
                           project.string(), "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--policy " + policy.string() + " is inside " + project.string()));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
