// The writer's local spool (docs/audit.md, "When the server is away: the local spool"),
// driven by a store that cannot write (an SQLite file another connection locks): rows go to
// the spool instead of being refused, keep their order, have their completions land, and
// are shipped once each when the store writes again; a full spool refuses, and drops nothing.
// PostgreSQL's shipped-up-to marker is covered by tests/integration/postgres/spool_test.cpp.
#include "netbox/audit/writer.hpp"
#include "sqlite_probe.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;
using namespace std::chrono_literals;

WriterOptions spooling(const std::filesystem::path& dir) {
  WriterOptions o;
  o.db_path = dir / "audit.db";
  o.spool_path = dir / "spool.db";
  o.flush_interval = 1ms;
  o.busy_timeout = 5ms;
  o.queue_capacity = 4;
  o.held_while_failing = 2;
  o.shutdown_grace = 200ms;
  return o;
}

bool spool_drains(Writer& writer) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    writer.flush();
    if (writer.stats().spool_rows == 0) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(AuditWriterSpool, RowsPastTheHoldGoToTheSpoolAndShipOnceInOrderWithTheirCompletions) {
  test::TempDir dir;
  auto o = spooling(dir.path());
  Writer writer(o);
  const RowHandle before = writer.insert(request("a", "h-before", "allow"));
  writer.flush();
  SqliteProbe locker(o.db_path);
  ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
  std::vector<RowHandle> handles;
  for (int i = 0; i < 200; ++i) {
    const RowHandle h = writer.insert(request("a", "h" + std::to_string(i), "allow"));
    ASSERT_NE(h, kNoRow) << "row " << i << " refused while the spool has room";
    handles.push_back(h);
    if (i % 10 == 0) std::this_thread::sleep_for(2ms);
  }
  Completion c;
  c.status = 201;
  EXPECT_TRUE(writer.complete(before, c));
  for (const RowHandle h : handles) EXPECT_TRUE(writer.complete(h, c));
  // A caller waiting for its row is answered once the row is in the spool.
  std::promise<bool> durable;
  writer.on_committed(handles.back(), [&](bool ok) { durable.set_value(ok); });
  auto answer = durable.get_future();
  ASSERT_EQ(answer.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(answer.get());
  EXPECT_GT(writer.stats().spool_rows, 0u);
  struct stat st {};
  ASSERT_EQ(::stat(o.spool_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
  ASSERT_TRUE(spool_drains(writer));
  writer.flush();
  SqliteProbe probe(o.db_path);
  std::string expected = "h-before";
  for (int i = 0; i < 200; ++i) expected += ",h" + std::to_string(i);
  EXPECT_EQ(probe.text("SELECT group_concat(host, ',') FROM (SELECT host FROM requests ORDER BY id)"), expected);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE status = 201"), 201);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM events WHERE kind = 'audit_spool_started'"), 1);
  EXPECT_GE(probe.number("SELECT COUNT(*) FROM events WHERE kind = 'audit_spool_shipped'"), 1);
  const auto s = writer.stats();
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.spool_shipped, 200u);
  EXPECT_EQ(s.spool_bytes, 0u);
  EXPECT_EQ(s.unknown_completions, 0u);
}

TEST(AuditWriterSpool, AFullSpoolRefusesNewRowsAndLosesNoneItTook) {
  test::TempDir dir;
  auto o = spooling(dir.path());
  o.spool_max_bytes = 4000;  // a few rows
  Writer writer(o);
  writer.insert(request("a", "first", "allow"));
  writer.flush();
  SqliteProbe locker(o.db_path);
  ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
  std::size_t accepted = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!writer.stats().spool_full && std::chrono::steady_clock::now() < deadline) {
    if (writer.insert(request("a", "r" + std::to_string(accepted), "allow")) != kNoRow) ++accepted;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(writer.stats().spool_full);
  // Past the hold, with the spool full: refused (the proxy answers 503). What the queue still
  // had room for before the refusal was taken, and must arrive like the rest.
  bool refused = false;
  std::size_t late = 0;
  for (int i = 0; i < 100 && !refused; ++i) {
    refused = writer.insert(request("a", "late", "allow")) == kNoRow;
    if (!refused) ++late;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(refused);
  // The writer's thread says why in its own time: the refusal can come before its words.
  std::string why;
  for (int i = 0; i < 1000 && (why = writer.stats().last_error).find("is full") == std::string::npos; ++i)
    std::this_thread::sleep_for(5ms);
  EXPECT_NE(why.find("is full"), std::string::npos) << why;
  ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
  ASSERT_TRUE(spool_drains(writer));
  writer.flush();
  SqliteProbe probe(o.db_path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host GLOB 'r[0-9]*'"), static_cast<long long>(accepted));
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host = 'late'"), static_cast<long long>(late));
}

// The spool's size bound counts bytes, also when the writer counts it again from the file
// (after a restart, or a drop): an agent whose rows carry multi-byte text (a path of "é",
// three bytes per replaced invalid byte) must not get a spool several times its bound.
TEST(AuditWriterSpool, TheSizeReadBackFromTheFileIsInBytesAsWhenItWasWritten) {
  test::TempDir dir;
  auto o = spooling(dir.path());
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "\xc3\xa9";  // é: two bytes, one character
  auto writer = std::make_unique<Writer>(o);
  writer->insert(request("a", "first", "allow"));
  writer->flush();
  SqliteProbe locker(o.db_path);
  ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
  RowHandle last = kNoRow;
  for (int i = 0; i < 20; ++i) last = writer->insert(request("a", wide + std::to_string(i), "allow"));
  ASSERT_NE(last, kNoRow);
  std::promise<bool> durable;
  writer->on_committed(last, [&](bool ok) { durable.set_value(ok); });
  auto answer = durable.get_future();
  ASSERT_EQ(answer.wait_for(30s), std::future_status::ready);
  ASSERT_TRUE(answer.get());
  writer.reset();  // stopped with the store still locked: what it holds stays in the spool
  SqliteProbe spool(o.spool_path);
  const auto bytes = spool.number("SELECT SUM(length(CAST(body AS BLOB))) FROM items");
  const auto characters = spool.number("SELECT SUM(length(body)) FROM items");
  ASSERT_GT(bytes, characters + 20 * 100 - 1) << "the rows should hold their é as two bytes each";
  Writer again(o);  // reads the spool back at its start, the store still locked
  EXPECT_EQ(static_cast<std::int64_t>(again.stats().spool_bytes), bytes);
  ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
}

// A row committed, then the store gone, then its completion (a tunnel ending as the proxy
// stops) spooled, then the proxy restarted: the writer's handles do not survive it, so the
// spooled completion carries the row's id, and the row is completed when it ships (before,
// it was dropped as unknown and the tunnel's row kept no status, bytes or end).
TEST(AuditWriterSpool, ACompletionSpooledForARowCommittedBeforeARestartCompletesIt) {
  test::TempDir dir;
  auto o = spooling(dir.path());
  auto writer = std::make_unique<Writer>(o);
  const RowHandle tunnel = writer->insert(request("a", "tunnel.test", "allow"));
  writer->flush();  // committed: its id is known to this writer only
  SqliteProbe locker(o.db_path);
  ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
  Completion done;
  done.status = 200;
  done.bytes_up = 1234;
  done.bytes_down = 5678;
  done.error = "proxy shut down before the exchange finished";
  ASSERT_TRUE(writer->complete(tunnel, done));
  writer.reset();  // stopped with the store locked: the completion waits in the spool
  ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
  Writer again(o);
  ASSERT_TRUE(spool_drains(again));
  again.flush();
  SqliteProbe probe(o.db_path);
  EXPECT_EQ(probe.text("SELECT status || ' ' || bytes_up || ' ' || bytes_down FROM requests WHERE host = 'tunnel.test'"),
            "200 1234 5678");
  EXPECT_EQ(again.stats().unknown_completions, 0u);
}

// What a spool shipped is found by its key alone, so one spool's key must not outlive the
// items it names: each time the emptied spool takes items again it names them anew (spool
// files copied with a host image start alike, and would otherwise drop each other's rows).
TEST(AuditWriterSpool, AnEmptiedSpoolNamesItsNextItemsWithANewKey) {
  test::TempDir dir;
  auto o = spooling(dir.path());
  Writer writer(o);
  writer.insert(request("a", "first", "allow"));
  writer.flush();
  const auto outage = [&](const std::string& host) {
    SqliteProbe locker(o.db_path);
    ASSERT_EQ(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK) << locker.last_error();
    RowHandle last = kNoRow;
    for (int i = 0; i < 10; ++i) last = writer.insert(request("a", host + std::to_string(i), "allow"));
    std::promise<bool> durable;
    writer.on_committed(last, [&](bool ok) { durable.set_value(ok); });
    auto answer = durable.get_future();
    ASSERT_EQ(answer.wait_for(30s), std::future_status::ready);
    ASSERT_GT(writer.stats().spool_rows, 0u);
    ASSERT_EQ(locker.exec("COMMIT"), SQLITE_OK);
    ASSERT_TRUE(spool_drains(writer));
  };
  outage("one-");
  outage("two-");
  writer.flush();
  SqliteProbe probe(o.db_path);
  EXPECT_EQ(probe.number("SELECT COUNT(DISTINCT json_extract(detail, '$.spool')) FROM events WHERE kind = "
                         "'audit_spool_shipped'"),
            2);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE host GLOB 'one-*' OR host GLOB 'two-*'"), 20);
}

}  // namespace
}  // namespace netbox::audit
