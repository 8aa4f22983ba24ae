// `netbox audit prune` and the proxy's --audit-retention: what is older than the cutoff
// goes, what a live exchange may still complete stays, and every run is itself recorded.
#include "netbox/audit/writer.hpp"
#include "support/process.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/sample_records.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace netbox::audit {
namespace {

using namespace std::chrono_literals;
using test::query;
using test::run_netbox;

AuditRecord request(std::string host, Clock::time_point ts) {
  return testing::request("builder", std::move(host), "allow", ts);
}

// Old and new rows of every table; "open-*" rows were never completed.
void fill(const std::filesystem::path& db) {
  WriterOptions o;
  o.db_path = db;
  Writer w(o);
  const auto now = Clock::now();
  for (const char* host : {"old-1.test", "old-2.test", "old-3.test"}) {
    const auto h = w.insert(request(host, now - 40 * 24h));
    Completion c;
    c.status = 200;
    c.duration_ms = 5;
    w.complete(h, c);
  }
  w.insert(request("open-recently.test", now - 40 * 24h));  // may still complete: kept
  w.insert(request("open-abandoned.test", now - 100 * 24h));  // its proxy is long gone
  for (const char* host : {"new-1.test", "new-2.test"}) {
    const auto h = w.insert(request(host, now - 1h));
    Completion c;
    c.duration_ms = 1;
    w.complete(h, c);
  }
  w.event(Event{now - 40 * 24h, "policy_load", "old load", ""});
  w.event(Event{now - 1h, "policy_load", "new load", ""});
  w.agent_started(AgentRecord{"gone", 1, "sh", "", "", now - 41 * 24h, ""});
  w.agent_exited(AgentExit{"gone", 1, now - 40 * 24h, 0, ""});
  w.agent_started(AgentRecord{"still-running", 2, "sh", "", "", now - 41 * 24h, ""});
  w.flush();
}

std::vector<std::string> hosts(const std::filesystem::path& db) {
  std::vector<std::string> out;
  for (const auto& row : query(db, "SELECT host FROM requests ORDER BY host")) out.push_back(row[0]);
  return out;
}

TEST(AuditPrune, RemovesWhatIsOlderKeepsOpenExchangesAndRecordsItself) {
  test::TempDir dir;
  const auto db = dir.path() / "audit.db";
  fill(db);
  const auto r = run_netbox({"audit", "prune", "--db", db.string(), "--older-than", "30d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "pruned 4 requests, 1 events and 1 agents older than 30d\n");
  EXPECT_EQ(hosts(db), (std::vector<std::string>{"new-1.test", "new-2.test", "open-recently.test"}));
  EXPECT_EQ(query(db, "SELECT name FROM agents"), (std::vector<std::vector<std::string>>{{"still-running"}}));
  EXPECT_EQ(query(db, "SELECT kind, message FROM events WHERE kind != 'audit_prune'"),
            (std::vector<std::vector<std::string>>{{"policy_load", "new load"}}));
  const auto prune_event = query(db, "SELECT detail FROM events WHERE kind = 'audit_prune'");
  ASSERT_EQ(prune_event.size(), 1U);
  EXPECT_NE(prune_event[0][0].find("\"requests\":4"), std::string::npos) << prune_event[0][0];

  // Nothing older is left: a second run removes nothing and says so.
  const auto again = run_netbox({"audit", "prune", "--db", db.string(), "--older-than", "30d", "--vacuum"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "pruned 0 requests, 0 events and 0 agents older than 30d; vacuumed\n");
  EXPECT_EQ(query(db, "PRAGMA integrity_check"), (std::vector<std::vector<std::string>>{{"ok"}}));
}

TEST(AuditPrune, BadDurationsAndMissingStoresAreUsageErrors) {
  test::TempDir dir;
  const auto db = dir.path() / "audit.db";
  fill(db);
  for (const char* bad : {"30", "30x", "-1d", "2026-01-01T00:00:00Z", ""}) {
    const auto r = run_netbox({"audit", "prune", "--db", db.string(), "--older-than", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--older-than"), std::string::npos) << r.err;
  }
  EXPECT_EQ(hosts(db).size(), 7U) << "a refused prune removed rows";
  const auto missing = run_netbox({"audit", "prune", "--db", (dir.path() / "none.db").string(), "--older-than", "1d"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.db"), std::string::npos) << missing.err;
  EXPECT_EQ(run_netbox({"audit", "prune", "--db", db.string()}).exit_code, 2) << "--older-than is required";
}

TEST(AuditRetention, TheWriterPrunesAtStartAndRecordsAnEvent) {
  test::TempDir dir;
  const auto db = dir.path() / "audit.db";
  fill(db);
  WriterOptions o;
  o.db_path = db;
  o.retention = std::chrono::hours(24 * 30);
  Writer w(o);
  // The first retention run is due at start; it runs on the writer thread.
  for (int i = 0; i < 200 && w.stats().pruned == 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(w.stats().pruned, 6U);  // 4 requests, 1 event, 1 agent
  // Inserts go on as before.
  EXPECT_NE(w.insert(request("after.test", Clock::now())), kNoRow);
  w.flush();
  EXPECT_EQ(hosts(db), (std::vector<std::string>{"after.test", "new-1.test", "new-2.test", "open-recently.test"}));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM events WHERE kind = 'audit_prune' AND message LIKE 'retention:%'"),
            (std::vector<std::vector<std::string>>{{"1"}}));
}

}  // namespace
}  // namespace netbox::audit
