// The writer thread against a real SQLite file: batching, late completion, drain, callbacks.
#include "netbox/audit/query.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;
using namespace std::chrono_literals;

// A flush interval no test waits out: rows reach the file only by a full batch,
// flush() or the destructor, so what a test sees does not depend on timing.
constexpr auto kNever = std::chrono::hours(1);

WriterOptions options_for(const std::filesystem::path& path) {
  WriterOptions o;
  o.db_path = path;
  o.flush_interval = kNever;
  return o;
}

// A completion that sets every column, read back as "502 100 2000 1234 127.0.0.2 connect timeout".
Completion every_field_completion() {
  Completion c;
  c.status = 502;
  c.bytes_up = 100;
  c.bytes_down = 2000;
  c.duration_ms = 1234;
  c.resolved_addr = "127.0.0.2";
  c.error = "connect timeout";
  return c;
}

class AuditWriter : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::filesystem::path path = dir.path() / "audit.db";
};

TEST_F(AuditWriter, InsertedRowKeepsEveryColumn) {
  Writer writer(options_for(path));
  AuditRecord r = request("agent-1", "api.example.com", "allow");
  r.ts = Clock::time_point{} + std::chrono::milliseconds(1795321234567);
  r.kind = "connect";
  r.method = "CONNECT";
  r.port = 443;
  r.path = "";
  r.status = 200;
  r.bytes_up = 17;
  r.bytes_down = 4096;
  r.duration_ms = 250;
  r.error = "upstream reset";
  ASSERT_NE(writer.insert(r), kNoRow);
  writer.flush();

  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT ts FROM requests"), format_timestamp(r.ts));
  EXPECT_EQ(probe.text("SELECT ts FROM requests"), "2026-11-22T04:20:34.567Z");
  EXPECT_EQ(probe.text("SELECT agent || '|' || client_addr || '|' || kind || '|' || method || '|' || host || '|' || "
                       "port || '|' || resolved_addr || '|' || decision || '|' || rule || '|' || reason || '|' || "
                       "status || '|' || bytes_up || '|' || bytes_down || '|' || duration_ms || '|' || error "
                       "FROM requests"),
            "agent-1|10.213.0.2:41234|connect|CONNECT|api.example.com|443|127.0.0.1|allow|allow[0] "
            "api.example.com|api.example.com matches allow[0]|200|17|4096|250|upstream reset");
  EXPECT_EQ(probe.number("SELECT path IS NULL FROM requests"), 1) << "empty text is stored as NULL";
  EXPECT_EQ(writer.stats().rows_written, 1u);
}

TEST_F(AuditWriter, UnopenableDatabaseThrowsNamingThePath) {
  const auto bad = dir.path() / "no-such-dir" / "audit.db";
  try {
    Writer writer(options_for(bad));
    FAIL() << "opened " << bad;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

TEST_F(AuditWriter, RowWithoutTimestampGetsTheInsertTime) {
  Writer writer(options_for(path));
  AuditRecord r = request("a", "h", "allow");
  r.ts = {};
  const auto before = format_timestamp(Clock::now() - 1s);
  writer.insert(r);
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_GE(probe.text("SELECT ts FROM requests"), before);
}

TEST_F(AuditWriter, FinalRowsNeedNoCompletion) {
  Writer writer(options_for(path));
  AuditRecord refused = request("a", "x.evil.example", "deny");
  refused.status = 403;
  refused.duration_ms = 0;
  EXPECT_TRUE(writer.insert_complete(refused));
  const RowHandle open_row = writer.insert(request("a", "api.example.com", "allow"));
  Completion c;
  c.status = 200;
  writer.complete(open_row, c);
  writer.flush();
  const auto s = writer.stats();
  EXPECT_EQ(s.rows_written, 2u);
  EXPECT_EQ(s.completions_written, 1u);
  EXPECT_EQ(s.unknown_completions, 0u);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT group_concat(host || '=' || status, ' ') FROM (SELECT * FROM requests ORDER BY id)"),
            "x.evil.example=403 api.example.com=200");
}

TEST_F(AuditWriter, ManyRowsCommitInFewTransactions) {
  auto o = options_for(path);
  o.max_batch = 1000;
  Writer writer(o);
  for (int i = 0; i < 10000; ++i) ASSERT_NE(writer.insert(request("a", "h" + std::to_string(i), "allow")), kNoRow);
  writer.flush();
  const auto s = writer.stats();
  EXPECT_EQ(s.rows_written, 10000u);
  // Full batches of 1000, plus at most one for whatever flush() found left.
  EXPECT_GE(s.batches, 10u);
  EXPECT_LE(s.batches, 11u);
  EXPECT_EQ(s.queue_depth, 0u);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 10000);
}

TEST_F(AuditWriter, QueueDepthCountsWhatIsNotCommittedYet) {
  Writer writer(options_for(path));
  for (int i = 0; i < 5; ++i) writer.insert(request("a", "h", "allow"));
  EXPECT_EQ(writer.stats().queue_depth, 5u);
  writer.flush();
  EXPECT_EQ(writer.stats().queue_depth, 0u);
}

TEST_F(AuditWriter, LateCompletionFillsStatusBytesDurationAndError) {
  Writer writer(options_for(path));
  AuditRecord r = request("a", "files.example.com", "allow");
  r.resolved_addr = "";
  const RowHandle h = writer.insert(r);
  writer.flush();
  {
    SqliteProbe probe(path);
    EXPECT_EQ(probe.number("SELECT status IS NULL AND duration_ms IS NULL AND bytes_down = 0 FROM requests"), 1);
  }
  const Completion c = every_field_completion();
  ASSERT_TRUE(writer.complete(h, c));
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT status || ' ' || bytes_up || ' ' || bytes_down || ' ' || duration_ms || ' ' || "
                       "resolved_addr || ' ' || error FROM requests"),
            "502 100 2000 1234 127.0.0.2 connect timeout");
  EXPECT_EQ(writer.stats().completions_written, 1u);
}

TEST_F(AuditWriter, CompletionWithoutAddressKeepsTheInsertedOne) {
  Writer writer(options_for(path));
  const RowHandle h = writer.insert(request("a", "h", "allow"));
  Completion c;
  c.status = 200;
  writer.complete(h, c);
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT resolved_addr FROM requests"), "127.0.0.1");
  EXPECT_EQ(probe.number("SELECT error IS NULL FROM requests"), 1);
}

TEST_F(AuditWriter, CompletionInTheSameBatchAsItsInsert) {
  Writer writer(options_for(path));
  const RowHandle h = writer.insert(request("a", "h", "allow"));
  Completion c;
  c.status = 204;
  c.duration_ms = 5;
  ASSERT_TRUE(writer.complete(h, c));
  writer.flush();
  writer.flush();
  const auto s = writer.stats();
  EXPECT_EQ(s.batches, 1u) << "insert and completion were queued together";
  EXPECT_EQ(s.completions_written, 1u);
  EXPECT_EQ(s.unknown_completions, 0u);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT status FROM requests"), 204);
}

// A request that ends before its row is written gets one INSERT of the final row: every
// completed value lands, nothing is written twice, and the rules of complete() still hold.
TEST_F(AuditWriter, CompletionInTheSameBatchIsWrittenWithTheInsertNotAsAnUpdate) {
  {
    Writer first(options_for(path));  // creates the schema
  }
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("CREATE TABLE updates (id INTEGER); "
                         "CREATE TRIGGER count_updates AFTER UPDATE ON requests "
                         "BEGIN INSERT INTO updates VALUES (new.id); END;"),
              SQLITE_OK);
  }
  Writer writer(options_for(path));
  const RowHandle full = writer.insert(request("a", "full.example", "allow"));
  const RowHandle kept = writer.insert(request("a", "kept.example", "allow"));
  const RowHandle open = writer.insert(request("a", "open.example", "allow"));
  const Completion c = every_field_completion();
  ASSERT_TRUE(writer.complete(full, c));
  Completion again;
  again.status = 500;
  ASSERT_TRUE(writer.complete(full, again));  // a second completion stays unknown
  Completion no_address;
  no_address.status = 204;
  ASSERT_TRUE(writer.complete(kept, no_address));
  writer.flush();
  auto s = writer.stats();
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.rows_written, 3u);
  EXPECT_EQ(s.completions_written, 2u);
  EXPECT_EQ(s.unknown_completions, 1u);
  {
    SqliteProbe probe(path);
    EXPECT_EQ(probe.text("SELECT status || ' ' || bytes_up || ' ' || bytes_down || ' ' || duration_ms || ' ' || "
                         "resolved_addr || ' ' || error FROM requests WHERE host = 'full.example'"),
              "502 100 2000 1234 127.0.0.2 connect timeout");
    EXPECT_EQ(probe.text("SELECT status || ' ' || resolved_addr || ' ' || (error IS NULL) FROM requests "
                         "WHERE host = 'kept.example'"),
              "204 127.0.0.1 1");
    EXPECT_EQ(probe.number("SELECT status IS NULL AND duration_ms IS NULL FROM requests WHERE host = 'open.example'"),
              1);
    EXPECT_EQ(probe.number("SELECT COUNT(*) FROM updates"), 0);
  }
  // The row left open is completed later, by an UPDATE, once.
  Completion late;
  late.status = 200;
  late.duration_ms = 7;
  ASSERT_TRUE(writer.complete(open, late));
  ASSERT_TRUE(writer.complete(full, late));  // completed in the earlier batch: unknown
  writer.flush();
  s = writer.stats();
  EXPECT_EQ(s.completions_written, 3u);
  EXPECT_EQ(s.unknown_completions, 2u);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT status FROM requests WHERE host = 'open.example'"), 200);
  EXPECT_EQ(probe.number("SELECT status FROM requests WHERE host = 'full.example'"), 502);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM updates"), 1);
}

TEST_F(AuditWriter, CompletionForAnUnknownHandleIsCountedAndHarmless) {
  Writer writer(options_for(path));
  const RowHandle h = writer.insert(request("a", "h", "allow"));
  EXPECT_TRUE(writer.complete(h + 1000, Completion{}));
  EXPECT_TRUE(writer.complete(kNoRow, Completion{}));
  Completion once;
  once.status = 200;
  writer.complete(h, once);
  writer.flush();
  Completion twice;
  twice.status = 500;
  writer.complete(h, twice);  // a row is completed once; the second is a caller bug
  writer.flush();
  writer.flush();  // a batch with nothing to write counts nothing again
  const auto s = writer.stats();
  EXPECT_EQ(s.unknown_completions, 3u);
  EXPECT_EQ(s.write_errors, 0u);
  EXPECT_TRUE(writer.healthy());
  EXPECT_NE(writer.insert(request("a", "h2", "allow")), kNoRow);
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 2);
  EXPECT_EQ(probe.number("SELECT status FROM requests WHERE host = 'h'"), 200);
}

TEST_F(AuditWriter, DestructorDrainsEverythingQueued) {
  std::vector<RowHandle> handles;
  {
    Writer writer(options_for(path));
    for (int i = 0; i < 500; ++i) handles.push_back(writer.insert(request("a", "h", i % 2 ? "allow" : "deny")));
    for (RowHandle h : handles) {
      Completion c;
      c.status = 200;
      c.bytes_down = 10;
      writer.complete(h, c);
    }
    writer.event(Event{Clock::now(), "policy_load", "loaded policy.json", ""});
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 500);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE status = 200 AND bytes_down = 10"), 500);
  EXPECT_EQ(probe.text("SELECT message FROM events"), "loaded policy.json");
}

TEST_F(AuditWriter, FullQueueIsBackPressureAndOnlyTheOverflowRefuses) {
  auto o = options_for(path);
  o.queue_capacity = 10;
  o.queue_overflow = 2;
  Writer writer(o);
  for (int i = 0; i < 10; ++i) ASSERT_NE(writer.insert(request("a", "h", "allow")), kNoRow) << i;
  EXPECT_FALSE(writer.has_room());
  for (int i = 0; i < 2; ++i) EXPECT_NE(writer.insert(request("a", "h", "allow")), kNoRow) << "the overflow";
  EXPECT_EQ(writer.insert(request("a", "h", "allow")), kNoRow) << "a caller that ignores has_room()";
  EXPECT_FALSE(writer.event(Event{Clock::now(), "x", "y", ""}));
  EXPECT_TRUE(writer.complete(1, Completion{})) << "a completion is never refused";
  EXPECT_TRUE(writer.agent_started(AgentRecord{"a", 1, "sh", "", "", Clock::now(), ""}));
  auto s = writer.stats();
  EXPECT_EQ(s.rejected, 2u);
  EXPECT_EQ(s.queue_depth, 14u);
  EXPECT_TRUE(s.healthy) << "a full queue is back pressure, not a broken store";
  writer.flush();
  EXPECT_TRUE(writer.has_room());
  EXPECT_NE(writer.insert(request("a", "h", "allow")), kNoRow) << "room again after the flush";
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 13);
}

TEST_F(AuditWriter, OnCommittedRunsAfterTheRowIsInTheFile) {
  Writer writer(options_for(path));
  const RowHandle h = writer.insert(request("a", "committed.example", "allow"));
  std::promise<std::pair<bool, std::int64_t>> seen;
  writer.on_committed(h, [&](bool ok) {
    // Another connection must already see the row when we are told it is committed.
    SqliteProbe probe(path);
    seen.set_value({ok, probe.number("SELECT COUNT(*) FROM requests WHERE host = 'committed.example'")});
  });
  writer.flush();
  auto result = seen.get_future();
  ASSERT_EQ(result.wait_for(30s), std::future_status::ready);
  const auto [ok, rows] = result.get();
  EXPECT_TRUE(ok);
  EXPECT_EQ(rows, 1);
}

TEST_F(AuditWriter, OnCommittedForARowCommittedEarlierOrNeverQueued) {
  Writer writer(options_for(path));
  const RowHandle h = writer.insert(request("a", "h", "allow"));
  writer.flush();
  std::promise<bool> earlier, never, none;
  writer.on_committed(h, [&](bool ok) { earlier.set_value(ok); });
  writer.on_committed(h + 50, [&](bool ok) { never.set_value(ok); });
  writer.on_committed(kNoRow, [&](bool ok) { none.set_value(ok); });
  writer.flush();
  EXPECT_TRUE(earlier.get_future().get());
  EXPECT_FALSE(never.get_future().get());
  EXPECT_FALSE(none.get_future().get());
}

TEST_F(AuditWriter, EventsAndAgentLifecycle) {
  Writer writer(options_for(path));
  const auto start = Clock::time_point{} + std::chrono::milliseconds(1795321200000);
  writer.agent_started(AgentRecord{"builder", 4242, "python agent.py --task x", "sha256:abc", "10.213.0.2", start,
                                   R"({"user":"nobody"})"});
  writer.event(Event{start, "launch", "launched builder", R"({"pid":4242})"});
  writer.agent_exited(AgentExit{"builder", 4242, start + 90s, 137, R"({"user_ms":10,"sys_ms":2,"max_rss_kb":900})"});
  writer.agent_exited(AgentExit{"stranger", 7, start + 5s, 0, ""});
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT name || ' ' || pid || ' ' || command_line || ' ' || policy_digest || ' ' || address "
                       "|| ' ' || started || ' ' || ended || ' ' || exit_status FROM agents WHERE name = 'builder'"),
            "builder 4242 python agent.py --task x sha256:abc 10.213.0.2 2026-11-22T04:20:00.000Z "
            "2026-11-22T04:21:30.000Z 137");
  EXPECT_EQ(probe.text("SELECT resource_usage FROM agents WHERE name = 'builder'"),
            R"({"user_ms":10,"sys_ms":2,"max_rss_kb":900})");
  EXPECT_EQ(probe.text("SELECT sandbox FROM agents WHERE name = 'builder'"), R"({"user":"nobody"})");
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM agents WHERE name = 'stranger' AND sandbox IS NULL"), 1)
      << "an exit without a recorded start has no sandbox";
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM agents"), 2) << "an exit without a recorded start is kept";
  EXPECT_EQ(probe.text("SELECT kind || ': ' || message || ' ' || detail FROM events"),
            R"(launch: launched builder {"pid":4242})");
}

TEST_F(AuditWriter, ReaderWorksWhileTheWriterWrites) {
  auto o = options_for(path);
  o.flush_interval = 2ms;
  o.max_batch = 64;
  Writer writer(o);
  writer.insert(request("a", "first", "allow"));
  writer.flush();

  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (int i = 0; i < 20000; ++i) {
      while (writer.insert(request(i % 3 ? "a" : "b", "h" + std::to_string(i % 50), i % 4 ? "allow" : "deny")) ==
             kNoRow)
        std::this_thread::yield();
    }
    writer.flush();
    done = true;
  });
  std::size_t reads = 0, last_total = 0;
  std::string failure;
  while (!done || reads < 5) {
    try {
      Filter f;
      f.limit = 0;
      f.agent = "a";
      const auto rows = query_requests(path, f);
      std::size_t total = 0;
      Filter everything;
      everything.limit = 0;
      for (const auto& s : summarize(path, everything)) total += s.allowed + s.denied;
      if (total < last_total) failure = "summary went backwards";
      last_total = total;
      if (rows.empty()) failure = "reader lost committed rows";
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) break;
    ++reads;
  }
  producer.join();
  EXPECT_EQ(failure, "");
  EXPECT_GE(reads, 5u);
  EXPECT_EQ(writer.stats().write_errors, 0u);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 20001);
}

}  // namespace
}  // namespace netbox::audit
