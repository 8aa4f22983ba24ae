// Where `netbox proxy` and `netbox launch` keep the audit store (issue 12, item 1): by
// default in a directory only its owner can enter (0700), files 0600; a configured path
// that others could write, or one in the agent's working directory, is refused with exit 2
// and a message naming the flag, the path and why, before anything is opened.
#include "durability_fixture.hpp"

#include "support/process.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace netbox::test {
namespace {

namespace fs = std::filesystem;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 07777;
  return st.st_mode & 07777;
}

constexpr const char* kPolicy = R"({"version": 1, "allow": []})";

TEST_F(DurabilityTest, AWorldWritableAuditDirectoryIsRefusedWithExit2) {
  const auto open_dir = dir.path() / "open";
  fs::create_directory(open_dir);
  ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);
  const auto policy = dir.write("policy.json", kPolicy);
  const auto db = open_dir / "audit.db";
  auto r = run_netbox({"proxy", "--policy", policy.string(), "--listen", "127.0.0.1:0", "--audit-db", db.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--audit-db " + db.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("world-writable"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(db)) << "nothing is opened before the check";

  auto l = run_netbox({"launch", "--audit-db", db.string(), "--", "true"});
  EXPECT_EQ(l.exit_code, 2) << l.err;
  EXPECT_NE(l.err.find("--audit-db " + db.string()), std::string::npos) << l.err;
}

TEST_F(DurabilityTest, AGroupWritableAuditDatabaseIsRefusedWithExit2) {
  const auto policy = dir.write("policy.json", kPolicy);
  const auto db = dir.write("audit.db", "");
  ASSERT_EQ(::chmod(db.c_str(), 0664), 0);
  auto r = run_netbox({"proxy", "--policy", policy.string(), "--listen", "127.0.0.1:0", "--audit-db", db.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("group- or world-writable"), std::string::npos) << r.err;
}

// `netbox launch` runs the agent in the launcher's working directory: a database there
// would be the agent's to read and lock.
TEST_F(DurabilityTest, ALaunchWhoseAuditDatabaseIsInItsWorkingDirectoryIsRefusedWithExit2) {
  const std::string cmd = "cd '" + dir.path().string() + "' && exec '" + netbox_binary().string() +
                          "' launch --audit-db netbox-audit.db -- true";
  auto r = run({"sh", "-c", cmd});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--audit-db netbox-audit.db"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("working directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "netbox-audit.db"));
}

// The default for a user other than root: $XDG_STATE_HOME/netbox/audit.db, its directory
// made 0700 and the database, -wal and -shm 0600. (Root's default, /var/lib/netbox, is made
// by the same code; the test leaves the host's /var/lib alone.)
TEST_F(DurabilityTest, TheDefaultAuditLocationIsPrivate) {
  if (::geteuid() != 0) GTEST_SKIP() << "runs the proxy as nobody, which needs root";
  const auto home = dir.path() / "home";
  fs::create_directory(home);
  ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0711), 0);  // nobody may pass through to its home
  const auto policy = home / "policy.json";
  {
    std::ofstream(policy) << kPolicy;
  }
  ASSERT_EQ(::chmod(policy.c_str(), 0644), 0);
  const auto state = home / "state";
  const unsigned short p = free_port();
  BackgroundProcess nobody({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                            netbox_binary().string(), "proxy", "--policy", policy.string(), "--listen",
                            "127.0.0.1:" + std::to_string(p)},
                           dir.path() / "nobody.log", {{"XDG_STATE_HOME", state.string()}});
  ASSERT_TRUE(wait_for_port(p)) << nobody.log();
  EXPECT_EQ(nobody.stop(SIGTERM), 0) << nobody.log();
  const auto db = state / "netbox" / "audit.db";
  EXPECT_EQ(mode_of(db.parent_path()), 0700u);
  EXPECT_EQ(mode_of(db), 0600u);
  EXPECT_EQ(mode_of(db.string() + "-wal"), 0600u);
  EXPECT_EQ(mode_of(db.string() + "-shm"), 0600u);
}

}  // namespace
}  // namespace netbox::test
