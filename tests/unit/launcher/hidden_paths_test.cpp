// Which of netbox's own files a launch hides from its agent, and whether by folder or by file.
#include "netbox/launcher/hidden_paths.hpp"

#include "netbox/launcher/launch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(HiddenPaths, TheDatabasesOwnFolderIsCoveredAsAWholeWithThePolicyAsAFile) {
  NetboxFiles f;
  f.audit_db = "/srv/netbox/audit/audit.db";
  f.policy = "/home/op/project/policy.json";
  auto h = plan_hidden_paths(f, {"/home/op/project", "/nonexistent"});
  EXPECT_THAT(h.folders, ElementsAre("/srv/netbox/audit"));
  // The project is needed: covered all the same, its other entries shown again, so that a
  // policy saved by a rename on the host never shows through.
  ASSERT_EQ(h.shared.size(), 1u);
  EXPECT_EQ(h.shared[0].folder, "/home/op/project");
  EXPECT_THAT(h.shared[0].hidden_names, ElementsAre("policy.json"));
  EXPECT_THAT(h.files, IsEmpty());
}

TEST(HiddenPaths, APolicyOrKeyInAWritableFolderIsRefusedAndTheFreshHomeHidesItsOwn) {
  NetboxFiles f;
  f.policy = "/home/op/project/conf/policy.json";
  EXPECT_THROW(plan_hidden_paths(f, {"/home/op/project"}, {"/home/op/project"}, {"/home/op/project"}), LaunchError);
  f.policy = "/home/op/policy.json";
  auto h = plan_hidden_paths(f, {"/home/op/project", "/home/op"}, {"/home/op/project"}, {"/home/op/project"}, "/home/op");
  EXPECT_THAT(h.shared, IsEmpty()) << "the agent's HOME is an empty tmpfs";
  EXPECT_THAT(h.files, IsEmpty());
}

TEST(HiddenPaths, AFolderTheAgentNeedsIsNotCoveredButEachFileIs) {
  NetboxFiles f;
  f.audit_db = "/home/op/project/audit.db";  // the working directory itself
  auto h = plan_hidden_paths(f, {"/home/op/project/src", "/nonexistent"});
  EXPECT_THAT(h.folders, IsEmpty());
  EXPECT_THAT(h.files, ElementsAre("/home/op/project/audit.db", "/home/op/project/audit.db-wal",
                                   "/home/op/project/audit.db-shm", "/home/op/project/audit.db-journal"));
  auto home = plan_hidden_paths(f, {"/srv/x", "/home/op/project/home"});
  EXPECT_THAT(home.folders, IsEmpty()) << "an ancestor of the agent's HOME";
  auto command = plan_hidden_paths(f, {"/srv/x", "/", "/home/op/project/run.sh"});
  EXPECT_THAT(command.folders, IsEmpty()) << "the folder of the command";
  f.audit_db = "/var/lib/audit.db";
  EXPECT_THAT(plan_hidden_paths(f, {"/srv/x", "/"}).folders, IsEmpty()) << "a system folder";
  f.audit_db = "/etc/audit.db";
  EXPECT_THAT(plan_hidden_paths(f, {"/srv/x", "/"}).folders, IsEmpty()) << "a top-level folder";
}

TEST(HiddenPaths, WhatTheFreshTmpfsCoverAlreadyAndWhatACoveredFolderHoldsAreLeftOut) {
  NetboxFiles f;
  f.audit_db = "/tmp/netbox/audit.db";
  f.control_socket = "/run/netbox/proxy.sock";
  f.policy = "/var/lib/netbox/policy.json";
  auto h = plan_hidden_paths(f, {"/srv/x", "/"});
  EXPECT_THAT(h.folders, ElementsAre("/var/lib/netbox"));
  EXPECT_THAT(h.files, IsEmpty());

  f.audit_db = "/var/lib/netbox/audit.db";
  auto inside = plan_hidden_paths(f, {"/srv/x", "/"});
  EXPECT_THAT(inside.folders, ElementsAre("/var/lib/netbox"));
  EXPECT_THAT(inside.files, IsEmpty()) << "the policy is in the covered folder";
}

TEST(HiddenPaths, AFreshTmpfsPathBoundFromTheHostIsHiddenAfterAll) {
  NetboxFiles f;
  f.audit_db = "/tmp/project/audit.db";  // the workdir, bound into the agent's fresh /tmp
  auto h = plan_hidden_paths(f, {"/tmp/project", "/"}, {"/tmp/project"});
  EXPECT_THAT(h.files, ElementsAre("/tmp/project/audit.db", "/tmp/project/audit.db-wal", "/tmp/project/audit.db-shm",
                                   "/tmp/project/audit.db-journal"));
}

}  // namespace
}  // namespace netbox::launcher
