// A store that cannot write: the writer holds its rows (up to held_while_failing), then
// refuses new ones, says so, and records both transitions once the store works again.
// Nothing it accepted is dropped, and nothing is dropped silently.
#include "netbox/audit/stored_text.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;
using namespace std::chrono_literals;

WriterOptions quick_failing(const std::filesystem::path& path) {
  WriterOptions o;
  o.db_path = path;
  o.flush_interval = std::chrono::hours(1);
  o.busy_timeout = 20ms;
  o.shutdown_grace = 200ms;
  return o;
}

// Polls `writer` (flush() retries at once) until it is healthy again or a generous deadline passes.
bool recovers(Writer& writer) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    writer.flush();
    if (writer.healthy()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void expect_transition_events(const std::filesystem::path& path, const std::string& error_word) {
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT group_concat(kind, ',') FROM (SELECT kind FROM events ORDER BY id)"),
            "audit_error,audit_recovered");
  const auto error_message = probe.text("SELECT message FROM events WHERE kind = 'audit_error'");
  EXPECT_NE(error_message.find(error_word), std::string::npos) << error_message;
  EXPECT_LE(probe.text("SELECT ts FROM events WHERE kind = 'audit_error'"),
            probe.text("SELECT ts FROM events WHERE kind = 'audit_recovered'"));
  EXPECT_NE(probe.text("SELECT message FROM events WHERE kind = 'audit_recovered'").find("no rows were lost"),
            std::string::npos);
}

TEST(AuditWriterFailure, LockedStoreRefusesNewRowsKeepsHeldOnesAndRecovers) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  auto o = quick_failing(path);
  o.held_while_failing = 1;
  Writer writer(o);
  const RowHandle before = writer.insert(request("a", "before-lock", "allow"));
  writer.flush();

  SqliteProbe locker(path);
  ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
  const RowHandle held = writer.insert(request("a", "during-lock", "deny"));
  ASSERT_NE(held, kNoRow) << "accepted while the writer did not know yet";
  writer.flush();  // one attempt, which fails on the lock

  EXPECT_FALSE(writer.healthy());
  auto s = writer.stats();
  EXPECT_GE(s.write_errors, 1u);
  EXPECT_NE(s.last_error.find("locked"), std::string::npos) << s.last_error;
  EXPECT_EQ(s.queue_depth, 1u) << "the failed row is held, not dropped";
  EXPECT_EQ(writer.insert(request("a", "refused", "allow")), kNoRow);
  EXPECT_FALSE(writer.insert_complete(request("a", "refused-too", "deny")));
  EXPECT_EQ(writer.stats().rejected, 2u);
  Completion c;
  c.status = 200;
  EXPECT_TRUE(writer.complete(before, c)) << "completions of rows already accepted still queue";
  EXPECT_TRUE(writer.complete(held, c));

  ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
  ASSERT_TRUE(recovers(writer));
  EXPECT_NE(writer.insert(request("a", "after", "allow")), kNoRow);
  writer.flush();

  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT group_concat(host, ',') FROM (SELECT host FROM requests ORDER BY id)"),
            "before-lock,during-lock,after");
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE status = 200"), 2);
  EXPECT_EQ(writer.stats().rows_written, 3u);
  expect_transition_events(path, "locked");
}

TEST(AuditWriterFailure, ShutdownOnABrokenStoreGivesUpLoudlyAfterTheGracePeriod) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  SqliteProbe locker(path);
  std::promise<bool> told;
  ::testing::internal::CaptureStderr();
  {
    Writer writer(quick_failing(path));
    ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
    const RowHandle h = writer.insert(request("a", "lost", "allow"));
    writer.on_committed(h, [&](bool ok) { told.set_value(ok); });
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(told.get_future().get()) << "a caller waiting for its row hears that it was not written";
  EXPECT_NE(err.find(path.string()), std::string::npos) << err;
  EXPECT_NE(err.find("1 queued audit rows are lost"), std::string::npos) << err;
  locker.exec("ROLLBACK");
}

// A lock another process holds for a while (here: another connection) costs no row: the
// writer keeps accepting up to its bound, refuses past it, and writes everything it took
// once the lock goes, shutdown included (it waits for the store within shutdown_grace).
TEST(AuditWriterFailure, RowsAcceptedWhileLockedAreAllWrittenWhenTheLockGoesEvenAtShutdown) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  auto o = quick_failing(path);
  o.held_while_failing = 50;
  o.shutdown_grace = 60s;
  SqliteProbe locker(path);
  std::thread release;
  {
    Writer writer(o);
    writer.agent_started(AgentRecord{"a", 7, "sh", "", "", Clock::now(), ""});
    writer.flush();
    ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
    int accepted = 0;
    for (int i = 0; i < 60; ++i) {
      auto r = request("a", "h" + std::to_string(i), "deny");
      r.status = 403;
      if (writer.insert_complete(r)) ++accepted;
      if (i == 0) writer.flush();  // the first attempt fails: the writer knows now
    }
    EXPECT_EQ(accepted, 50) << "held up to the bound, refused past it";
    EXPECT_FALSE(writer.healthy());
    EXPECT_TRUE(writer.has_room()) << "a failing store lets callers go on, to be refused";
    EXPECT_TRUE(writer.agent_exited(AgentExit{"a", 7, Clock::now(), 0, "{}"}));
    // The destructor waits for the store; the lock goes while it does.
    release = std::thread([&] {
      std::this_thread::sleep_for(300ms);
      locker.exec("COMMIT");
    });
  }
  release.join();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 50);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM agents WHERE ended IS NOT NULL"), 1) << "the agent's end is kept";
  const auto error = probe.text("SELECT message FROM events WHERE kind = 'audit_error'");
  EXPECT_NE(error.find("10 new requests were refused"), std::string::npos) << error;
}

// A tmpfs of its own, so "disk full" is real and touches nothing else on the machine.
class AuditSmallDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_point = dir.path() / "disk";
    std::filesystem::create_directory(mount_point);
    if (::mount("netbox-audit-test", mount_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0)
      GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); needs root";
    mounted = true;
  }
  void TearDown() override {
    if (mounted) ::umount2(mount_point.c_str(), MNT_DETACH);
  }

  // Writes a file until the file system says ENOSPC.
  void fill_disk() {
    const auto filler = mount_point / "filler";
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const int err = errno;
    ::close(fd);
    ASSERT_EQ(err, ENOSPC);
  }

  test::TempDir dir;
  std::filesystem::path mount_point;
  bool mounted = false;
};

TEST_F(AuditSmallDisk, FullDiskRefusesNewRowsAndRecoversWhenSpaceReturns) {
  const auto path = mount_point / "audit.db";
  {
    auto o = quick_failing(path);
    o.held_while_failing = 20;
    Writer writer(o);
    writer.insert(request("a", "first", "allow"));
    writer.flush();
    fill_disk();

    // Rows of about a page each, so the log must grow.
    for (int i = 0; i < 20; ++i) {
      auto r = request("a", "big" + std::to_string(i), "allow");
      r.path = "/" + std::string(kMaxStoredPath - 1, 'p');
      ASSERT_NE(writer.insert(r), kNoRow);
    }
    writer.flush();
    EXPECT_FALSE(writer.healthy());
    const auto s = writer.stats();
    EXPECT_NE(s.last_error.find("full"), std::string::npos) << s.last_error;
    EXPECT_EQ(s.queue_depth, 20u);
    EXPECT_EQ(writer.insert(request("a", "refused", "allow")), kNoRow);

    std::filesystem::remove(mount_point / "filler");
    ASSERT_TRUE(recovers(writer));
    EXPECT_EQ(writer.stats().rows_written, 21u);
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 21);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host = 'refused'"), 0);
  expect_transition_events(path, "full");
}

}  // namespace
}  // namespace netbox::audit
