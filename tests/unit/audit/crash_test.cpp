// The documented durability bound: kill -9 loses only what was still queued; everything
// committed survives and the file stays a healthy database the next writer continues.
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;

TEST(AuditCrash, KillNineLosesOnlyTheQueuedRows) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    WriterOptions o;
    o.db_path = path;
    o.flush_interval = std::chrono::hours(1);
    Writer writer(o);
    for (int i = 0; i < 1000; ++i) writer.insert(request("a", "committed", "allow"));
    writer.flush();
    for (int i = 0; i < 100; ++i) writer.insert(request("a", "queued", "allow"));
    raise(SIGKILL);
    _exit(1);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  {
    SqliteProbe probe(path);
    EXPECT_EQ(probe.text("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host = 'committed'"), 1000);
    EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host = 'queued'"), 0);
  }
  WriterOptions o;
  o.db_path = path;
  Writer next(o);
  EXPECT_NE(next.insert(request("a", "after-restart", "allow")), kNoRow);
  next.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 1001);
}

}  // namespace
}  // namespace netbox::audit
