// The audit store is out of every agent's reach: its default directory is made 0700, the
// database, its -wal and its -shm are 0600 whatever the umask, and a configured path that
// others could write, or one in the agent's working directory, is refused with a message
// naming the flag, the path and why.
#include "netbox/audit/location.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

namespace fs = std::filesystem;

WriterOptions at(const fs::path& db) {
  WriterOptions o;
  o.db_path = db;
  return o;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 07777;
  return st.st_mode & 07777;
}

std::string refusal(const fs::path& db, const std::optional<fs::path>& workdir = std::nullopt) {
  try {
    check_db_location(db, "--audit-db", workdir);
  } catch (const DatabaseRejected& e) {
    return e.what();
  }
  return {};
}

TEST(AuditLocation, DefaultIsUnderVarLibForRootAndTheStateHomeOtherwise) {
  EXPECT_EQ(default_db_path(true, "/x", "/home/u"), fs::path("/var/lib/netbox/audit.db"));
  EXPECT_EQ(default_db_path(false, "/x/state", "/home/u"), fs::path("/x/state/netbox/audit.db"));
  EXPECT_EQ(default_db_path(false, nullptr, "/home/u"), fs::path("/home/u/.local/state/netbox/audit.db"));
  EXPECT_EQ(default_db_path(false, "relative", "/home/u"), fs::path("/home/u/.local/state/netbox/audit.db"))
      << "XDG says a relative XDG_STATE_HOME is ignored";
}

TEST(AuditLocation, TheDefaultDirectoryIsMade0700AndTheFiles0600WhateverTheUmask) {
  test::TempDir dir;
  const fs::path db = dir.path() / "state" / "netbox" / "audit.db";
  const mode_t old = ::umask(0);
  prepare_default_location(db, "--audit-db");
  {
    WriterOptions o;
    o.db_path = db;
    Writer writer(o);
    writer.insert(testing::request("a", "h", "allow"));
    writer.flush();
    EXPECT_EQ(mode_of(db.string() + "-wal"), 0600u);
    EXPECT_EQ(mode_of(db.string() + "-shm"), 0600u);
  }
  ::umask(old);
  EXPECT_EQ(mode_of(db.parent_path()), 0700u);
  EXPECT_EQ(mode_of(db), 0600u);
}

TEST(AuditLocation, CompanionsLeftWiderByAnOlderNetboxAreTightened) {
  test::TempDir dir;
  const fs::path db = dir.path() / "audit.db";
  { Writer writer(at(db)); }
  ASSERT_EQ(::chmod((db.string() + "-shm").c_str(), 0644), 0);
  ASSERT_EQ(::chmod((db.string() + "-wal").c_str(), 0644), 0);
  { Writer writer(at(db)); }
  EXPECT_EQ(mode_of(db.string() + "-shm"), 0600u);
  EXPECT_EQ(mode_of(db.string() + "-wal"), 0600u);
}

TEST(AuditLocation, APrivateDirectoryIsAccepted) {
  test::TempDir dir;  // mkdtemp: 0700
  EXPECT_EQ(refusal(dir.path() / "audit.db"), "");
}

TEST(AuditLocation, AWorldWritableDirectoryIsRefused) {
  test::TempDir dir;
  const fs::path open_dir = dir.path() / "open";
  fs::create_directory(open_dir);
  ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);
  const auto why = refusal(open_dir / "audit.db");
  EXPECT_NE(why.find("--audit-db"), std::string::npos) << why;
  EXPECT_NE(why.find(open_dir.string()), std::string::npos) << why;
  EXPECT_NE(why.find("world-writable"), std::string::npos) << why;
}

TEST(AuditLocation, AGroupWritableDatabaseOrShmIsRefused) {
  test::TempDir dir;
  const fs::path db = dir.path() / "audit.db";
  { Writer writer(at(db)); }
  EXPECT_EQ(refusal(db), "");
  ASSERT_EQ(::chmod((db.string() + "-shm").c_str(), 0666), 0);
  EXPECT_NE(refusal(db).find("-shm has mode 0666"), std::string::npos) << refusal(db);
  ASSERT_EQ(::chmod((db.string() + "-shm").c_str(), 0600), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0620), 0);
  EXPECT_NE(refusal(db).find("group- or world-writable"), std::string::npos) << refusal(db);
}

TEST(AuditLocation, ADatabaseOwnedBySomeoneElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root (CI runs as root)";
  test::TempDir dir;
  const fs::path db = dir.path() / "audit.db";
  { Writer writer(at(db)); }
  ASSERT_EQ(::chown(db.c_str(), 65534, 65534), 0);
  EXPECT_NE(refusal(db).find("owned by uid 65534"), std::string::npos) << refusal(db);
}

TEST(AuditLocation, ASymlinkInPlaceOfTheDatabaseIsRefused) {
  test::TempDir dir;
  fs::create_symlink("/etc/passwd", dir.path() / "audit.db");
  EXPECT_NE(refusal(dir.path() / "audit.db").find("not a regular file"), std::string::npos);
}

TEST(AuditLocation, ADatabaseInTheAgentsWorkingDirectoryIsRefused) {
  test::TempDir dir;
  fs::create_directory(dir.path() / "sub");
  EXPECT_NE(refusal(dir.path() / "audit.db", dir.path()).find("inside the agent's working directory"),
            std::string::npos);
  EXPECT_NE(refusal(dir.path() / "sub" / "audit.db", dir.path()).find("working directory"), std::string::npos);
  // Relative to the working directory, as `--audit-db audit.db` would be.
  const auto cwd = fs::current_path();
  fs::current_path(dir.path());
  const auto why = refusal("audit.db", dir.path());
  fs::current_path(cwd);
  EXPECT_NE(why.find("working directory"), std::string::npos) << why;
  EXPECT_EQ(refusal(dir.path() / "audit.db", dir.path() / "sub"), "") << "a sibling of the workdir is fine";
  EXPECT_EQ(refusal(dir.path() / "audit.db", fs::path("/")), "") << "a workdir of / says nothing";
}

}  // namespace
}  // namespace netbox::audit
