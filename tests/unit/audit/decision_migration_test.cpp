// Schema 4: the decisions cap and error. Rows written before it are moved where their
// status tells them apart (audit/src/migrations.cpp), and a completion can turn an
// admitted row into error when netbox answered instead of the upstream.
#include "netbox/audit/decision.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <string>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;

struct OldRow {
  const char* host;
  const char* decision;
  const char* rule;  // nullptr: NULL
  int status;
  const char* error;  // nullptr: NULL
  int bytes_down;
  const char* expected;
};

// What schema 3 stored, and what each row says after the upgrade.
constexpr OldRow kOldRows[] = {
    {"cap.test", "deny", "limits.max_connections_per_host", 429, nullptr, 0, "cap"},
    {"*", "deny", nullptr, 429, nullptr, 0, "cap"},  // folded refusals: no rule, the status tells
    {"bad.test", "deny", "request", 400, nullptr, 0, "error"},
    {"trace.test", "deny", "method", 405, nullptr, 0, "error"},
    {"big.test", "deny", "request", 431, nullptr, 0, "error"},
    {"evil.test", "deny", "deny[0] evil.test", 403, nullptr, 0, "deny"},
    {"gone.test", "allow", "allow[0] gone.test", 502, "connection refused", 0, "error"},
    {"slow.test", "report", "", 504, "the upstream did not answer within 600 ms", 0, "error"},
    {"nx.test", "allow", "allow[0] nx.test", 502, "DNS lookup of nx.test failed", 0, "error"},
    // The upstream's own answer, cut short: the agent got it, not a netbox error.
    {"cut.test", "allow", "allow[0] cut.test", 502, "reading the response body failed: end of stream", 0, "allow"},
    {"own502.test", "allow", "allow[0] own502.test", 502, nullptr, 0, "allow"},
    {"tunnel.test", "allow", "allow[0] tunnel.test", 200, "agent side: Connection reset by peer", 0, "allow"},
    {"part.test", "allow", "allow[0] part.test", 504, "the upstream stopped sending the body (timeout)", 10, "allow"},
    {"fine.test", "allow", "allow[0] fine.test", 200, nullptr, 100, "allow"},
};

std::string quoted(const char* s) { return s ? "'" + std::string(s) + "'" : "NULL"; }

TEST(AuditDecisions, VersionThreeRowsAreMovedToCapAndErrorWhereTheirStatusTells) {
  test::TempDir dir;
  const auto path = dir.path() / "v3.db";
  sqlite3_close_v2(open_for_writing(path, false));
  {
    // The file as schema 3 left it: old decisions, and user_version 3 (the views of
    // schema 4 are dropped and made again by the upgrade).
    SqliteProbe probe(path);
    for (const auto& r : kOldRows)
      ASSERT_EQ(probe.exec("INSERT INTO requests (ts, agent, kind, host, port, decision, rule, status, error, "
                           "bytes_down) VALUES ('2026-11-20T10:00:00.000Z', 'old', 'http', '" +
                           std::string(r.host) + "', 80, '" + r.decision + "', " + quoted(r.rule) + ", " +
                           std::to_string(r.status) + ", " + quoted(r.error) + ", " + std::to_string(r.bytes_down) +
                           ")"),
                SQLITE_OK)
          << probe.last_error();
    // Nor had it schema 5's parent_id (its view and index first), schema 6's events.count,
    // schema 7's proxy_id, schema 8's audit chain, schema 9's batch links or schema 10's
    // client_* columns.
    ASSERT_EQ(probe.exec("DROP VIEW inspected_requests; DROP INDEX requests_parent; "
                         "ALTER TABLE requests DROP COLUMN parent_id; DROP INDEX events_kind_ts; "
                         "ALTER TABLE events DROP COLUMN count; ALTER TABLE requests DROP COLUMN proxy_id; "
                         "ALTER TABLE events DROP COLUMN proxy_id; ALTER TABLE agents DROP COLUMN proxy_id; "
                         "DROP TABLE audit_chain; DROP TABLE audit_chain_heads; DROP TABLE audit_chain_start; "
                         "DROP TABLE audit_chain_batches; "
                         "ALTER TABLE requests DROP COLUMN client_pid; ALTER TABLE requests DROP COLUMN client_exe; "
                         "ALTER TABLE requests DROP COLUMN client_argv"),
              SQLITE_OK)
        << probe.last_error();
    ASSERT_EQ(probe.exec("PRAGMA user_version = 3"), SQLITE_OK);
  }
  sqlite3_close_v2(open_for_writing(path, false));

  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(probe.number("SELECT last_id FROM audit_chain_start WHERE tbl = 'requests'"),
            static_cast<std::int64_t>(std::size(kOldRows)))
      << "schema 8: the rows before the chain are counted as not covered, by id";
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE parent_id IS NOT NULL"), 0)
      << "schema 5: old rows belong to no tunnel";
  for (const auto& r : kOldRows)
    EXPECT_EQ(probe.text("SELECT decision FROM requests WHERE host = '" + std::string(r.host) + "'"), r.expected)
        << r.host;
  // Every stored value is one the CLI accepts.
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests WHERE decision NOT IN ('allow', 'report', 'deny', 'cap', "
                         "'error')"),
            0);
  EXPECT_EQ(probe.number("SELECT capped FROM agent_activity WHERE agent = 'old'"), 2);
  EXPECT_EQ(probe.number("SELECT failed FROM agent_activity WHERE agent = 'old'"), 6);
  EXPECT_EQ(probe.number("SELECT denied FROM agent_activity WHERE agent = 'old'"), 1);
  EXPECT_EQ(probe.number("SELECT capped + failed FROM hourly_traffic"), 8);
  EXPECT_EQ(probe.number("SELECT SUM(denied) FROM denied_by_host"), 1) << "caps and errors are not denials";
}

TEST(AuditDecisions, TheVocabularyIsTheFiveValuesAndNothingElse) {
  for (const char* d : {"allow", "report", "deny", "cap", "error"}) EXPECT_TRUE(is_decision(d)) << d;
  for (const char* d : {"", "Allow", "denied", "refused", "allow "}) EXPECT_FALSE(is_decision(d)) << d;
}

// An admitted request whose upstream failed: the row was inserted as allow and the
// completion says error, whether it lands in the same batch as the insert or later.
TEST(AuditDecisions, ACompletionWithADecisionReplacesTheInsertedOne) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  WriterOptions o;
  o.db_path = path;
  o.flush_interval = std::chrono::hours(1);
  Writer writer(o);
  Completion failed;
  failed.status = 502;
  failed.error = "connection refused";
  failed.decision = "error";
  Completion fine;
  fine.status = 200;

  const auto paired = writer.insert(request("a", "paired.test", "allow"));
  ASSERT_TRUE(writer.complete(paired, failed));
  const auto late = writer.insert(request("a", "late.test", "report"));
  writer.flush();
  ASSERT_TRUE(writer.complete(late, failed));
  const auto kept = writer.insert(request("a", "kept.test", "allow"));
  writer.flush();
  ASSERT_TRUE(writer.complete(kept, fine));
  writer.flush();

  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT decision || ' ' || status FROM requests WHERE host = 'paired.test'"), "error 502");
  EXPECT_EQ(probe.text("SELECT decision || ' ' || status FROM requests WHERE host = 'late.test'"), "error 502");
  EXPECT_EQ(probe.text("SELECT decision || ' ' || status FROM requests WHERE host = 'kept.test'"), "allow 200");
}

}  // namespace
}  // namespace netbox::audit
