// A policy file that another local user may change is refused at start by `netbox proxy`,
// `netbox launch` and `netbox policy check` (exit 2 naming the file and what is wrong):
// whoever may write it decides what the proxy lets through (issue 22, item 16). The
// reload side is in tests/integration/proxy/reload_test.cpp.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace netbox::test {
namespace {

class PolicyFileTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root; CI runs as root";
    ::chmod(dir.path().c_str(), 0755);
    policy = dir.write("policy.json", R"({"version": 1, "allow": ["example.test"]})");
    ::chmod(policy.c_str(), 0644);
  }
  // Each door that reads a policy file, refusing it before anything starts.
  std::vector<std::vector<std::string>> commands() const {
    return {{"proxy", "--policy", policy.string(), "--listen", "127.0.0.1:0", "--audit-db",
             (state.path() / "audit.db").string()},
            {"launch", "--policy", policy.string(), "--", "true"},
            {"policy", "check", policy.string()}};
  }
  void expect_refused(const std::string& why) const {
    for (const auto& args : commands()) {
      auto r = run_netbox(args, std::chrono::seconds(30));
      EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
      EXPECT_NE(r.err.find(policy.string()), std::string::npos) << args[0] << ": " << r.err;
      EXPECT_NE(r.err.find(why), std::string::npos) << args[0] << ": " << r.err;
    }
  }

  TempDir dir;
  TempDir state;  // the audit store, apart: its own folder checks are not under test
  std::filesystem::path policy;
};

TEST_F(PolicyFileTrustTest, AWorldWritablePolicyIsRefused) {
  ASSERT_EQ(::chmod(policy.c_str(), 0646), 0);
  expect_refused("mode 0646 lets every local user change it");
}

TEST_F(PolicyFileTrustTest, APolicyOwnedByAnotherUserIsRefused) {
  ASSERT_EQ(::chown(policy.c_str(), 65534, 65534), 0);
  expect_refused("owned by uid 65534");
}

TEST_F(PolicyFileTrustTest, APolicyInAFolderOthersMayWriteIsRefused) {
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  expect_refused("lets other users rename another file over it");
  ::chmod(dir.path().c_str(), 0700);
}

// /tmp-like: others may add files to a sticky folder but not replace one they do not own.
TEST_F(PolicyFileTrustTest, APolicyOfOursInAStickyFolderIsAccepted) {
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  auto r = run_netbox({"policy", "check", policy.string()}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ::chmod(dir.path().c_str(), 0700);
}

// A FIFO planted at the path would have blocked the load (and every reload) in open().
TEST_F(PolicyFileTrustTest, AFifoIsRefusedNotWaitedOn) {
  const auto fifo = dir.path() / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto r = run_netbox({"policy", "check", fifo.string()}, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

// `sudo netbox launch --policy ../policy.json` from a user's own folder (the README's way
// from an account): root works for the sudo caller, whose files are trusted as root's are
// (found by a review: they were refused as another user's). Anyone else's stay refused.
TEST_F(PolicyFileTrustTest, ThePolicyOfTheUserWhoRanSudoIsAccepted) {
  constexpr uid_t kCaller = 4242;
  ASSERT_EQ(::chown(policy.c_str(), kCaller, kCaller), 0);
  ASSERT_EQ(::chown(dir.path().c_str(), kCaller, kCaller), 0);
  ::chmod(policy.c_str(), 0664);  // a user-private group under umask 002
  const std::vector<std::string> check{netbox_binary().string(), "policy", "check", policy.string()};
  auto as_caller = check;
  as_caller.insert(as_caller.begin(), {"env", "SUDO_UID=4242", "SUDO_GID=4242"});
  auto r = run(as_caller, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto other = check;
  other.insert(other.begin(), {"env", "SUDO_UID=4343", "SUDO_GID=4343"});
  r = run(other, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("owned by uid 4242"), std::string::npos) << r.err;
  ::chown(dir.path().c_str(), 0, 0);
}

}  // namespace
}  // namespace netbox::test
