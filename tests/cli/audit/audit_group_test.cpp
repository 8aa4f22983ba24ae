// The audit store in a folder that lets its group in (the package's /var/lib/netbox is
// root:netbox 0750) is made readable by that group, and only by it: a security team in the
// group reads the audit with `netbox audit`, nobody else can, and nobody but root writes.
#include "netbox/audit/writer.hpp"
#include "support/process.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netbox::audit {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr gid_t kTeam = 65534;  // nogroup stands in for the package's netbox group

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st;
}

// `netbox audit` as the unprivileged user 65534 with exactly this group.
test::RunResult audit_as(gid_t gid, const fs::path& db) {
  return test::run({"setpriv", "--reuid=65534", "--regid=" + std::to_string(gid), "--clear-groups",
                    test::netbox_binary().string(), "audit", "--audit-db", db.string(), "--format", "json"});
}

TEST(AuditGroup, AStoreInAFolderItsGroupMayEnterIsReadableByThatGroupAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown, setpriv)";
  test::TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0711), 0);  // others may pass through to the state folder
  const fs::path state = tmp.path() / "state";
  ASSERT_EQ(::mkdir(state.c_str(), 0750), 0);
  ASSERT_EQ(::chown(state.c_str(), 0, kTeam), 0);
  const fs::path db = state / "audit.db";
  {
    WriterOptions o;
    o.db_path = db;
    Writer w(o);
    w.insert(testing::request("agent-1", "api.example.test", "allow"));
    w.flush();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const auto st = stat_of(db.string() + suffix);
      EXPECT_EQ(st.st_mode & 07777, 0640u) << suffix;
      EXPECT_EQ(st.st_gid, kTeam) << suffix;
      EXPECT_EQ(st.st_uid, 0u) << suffix;
    }
    // Read while the proxy's writer holds the store open, as a team member would.
    auto team = audit_as(kTeam, db);
    EXPECT_EQ(team.exit_code, 0) << team.err;
    EXPECT_THAT(team.out, HasSubstr("api.example.test"));
  }
  auto outsider = audit_as(12345, db);
  EXPECT_NE(outsider.exit_code, 0);
  EXPECT_THAT(outsider.out, ::testing::Not(HasSubstr("api.example.test")));

  // A folder that keeps its group out keeps the store root's alone.
  const fs::path closed = tmp.path() / "closed";
  ASSERT_EQ(::mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(::chown(closed.c_str(), 0, kTeam), 0);
  {
    WriterOptions o;
    o.db_path = closed / "audit.db";
    Writer w(o);
  }
  EXPECT_EQ(stat_of(closed / "audit.db").st_mode & 07777, 0600u);
}

}  // namespace
}  // namespace netbox::audit
