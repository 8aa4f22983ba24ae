// Creating, re-opening and migrating the store, and refusing files that are not ours.
#include "netbox/audit/schema.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace netbox::audit {
namespace {

using testing::SqliteProbe;

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Handle = std::unique_ptr<sqlite3, Closer>;

std::set<std::string> names(SqliteProbe& probe, const std::string& type) {
  std::set<std::string> out;
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(probe.handle(), "SELECT name FROM sqlite_schema WHERE type = ?1", -1, &stmt, nullptr);
  sqlite3_bind_text(stmt, 1, type.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(stmt) == SQLITE_ROW) out.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  return out;
}

std::set<std::string> columns(SqliteProbe& probe, const std::string& table) {
  std::set<std::string> out;
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(probe.handle(), ("PRAGMA table_info(" + table + ")").c_str(), -1, &stmt, nullptr);
  while (sqlite3_step(stmt) == SQLITE_ROW) out.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)));
  sqlite3_finalize(stmt);
  return out;
}

template <typename F>
std::string rejection(F&& open) {
  try {
    Handle h(open());
  } catch (const DatabaseRejected& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(AuditSchema, NewFileGetsEveryTableIndexAndViewInWalMode) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  Handle db(open_for_writing(path, false));
  EXPECT_EQ(schema_version(db.get()), kSchemaVersion);

  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(names(probe, "table"), (std::set<std::string>{"requests", "agents", "events", "audit_chain",
                                                          "audit_chain_heads", "audit_chain_start",
                                                          "audit_chain_batches"}));
  EXPECT_EQ(columns(probe, "requests"),
            (std::set<std::string>{"id", "ts", "agent", "client_addr", "kind", "method", "host", "port", "path",
                                   "resolved_addr", "decision", "rule", "reason", "status", "bytes_up",
                                   "bytes_down", "duration_ms", "error", "count", "parent_id", "proxy_id", "client_pid",
                                   "client_exe", "client_argv"}));
  EXPECT_EQ(columns(probe, "agents"),
            (std::set<std::string>{"id", "name", "pid", "command_line", "policy_digest", "address", "started",
                                   "ended", "exit_status", "resource_usage", "sandbox", "proxy_id"}));
  EXPECT_EQ(columns(probe, "events"), (std::set<std::string>{"id", "ts", "kind", "message", "detail", "count", "proxy_id"}));
  const auto views = names(probe, "view");
  EXPECT_EQ(views, (std::set<std::string>{"denied_by_host", "agent_activity", "hourly_traffic", "inspected_requests"}));
  const auto indexes = names(probe, "index");
  for (const char* index :
       {"requests_ts", "requests_agent_ts", "requests_decision_ts", "requests_host", "requests_parent", "events_kind_ts"})
    EXPECT_TRUE(indexes.contains(index)) << index;
}

TEST(AuditSchema, AgentQueriesUseTheAgentTimeIndex) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  Handle db(open_for_writing(path, false));
  SqliteProbe probe(path);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(probe.handle(),
                               "EXPLAIN QUERY PLAN SELECT * FROM requests WHERE agent = 'a' AND ts >= '2026' "
                               "ORDER BY ts DESC",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  std::string details;
  while (sqlite3_step(stmt) == SQLITE_ROW) details += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
  sqlite3_finalize(stmt);
  EXPECT_NE(details.find("requests_agent_ts"), std::string::npos) << details;
}

TEST(AuditSchema, ReopeningKeepsRowsAndVersion) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  { Handle db(open_for_writing(path, false)); }
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("INSERT INTO events (ts, kind, message) VALUES ('2026-01-01T00:00:00.000Z', 'x', 'kept')"),
              SQLITE_OK);
  }
  Handle again(open_for_writing(path, true));
  EXPECT_EQ(schema_version(again.get()), kSchemaVersion);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT message FROM events"), "kept");
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'requests'"), 1);
}

// A database written by netbox before `count` existed (version 1) is upgraded in place:
// its rows each stand for one request, and the views add counts.
TEST(AuditSchema, VersionOneDatabaseGetsCountsOfOne) {
  test::TempDir dir;
  const auto path = dir.path() / "v1.db";
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("BEGIN"), SQLITE_OK);
    // The version 1 tables, as netbox 1 created them (views left out: the upgrade makes them).
    ASSERT_EQ(probe.exec("CREATE TABLE requests (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, agent TEXT NOT NULL, "
                         "client_addr TEXT, kind TEXT NOT NULL, method TEXT, host TEXT NOT NULL, "
                         "port INTEGER NOT NULL, path TEXT, resolved_addr TEXT, decision TEXT NOT NULL, rule TEXT, "
                         "reason TEXT, status INTEGER, bytes_up INTEGER NOT NULL DEFAULT 0, "
                         "bytes_down INTEGER NOT NULL DEFAULT 0, duration_ms INTEGER, error TEXT);"
                         "CREATE TABLE agents (id INTEGER PRIMARY KEY, name TEXT NOT NULL, pid INTEGER NOT NULL, "
                         "command_line TEXT, policy_digest TEXT, address TEXT, started TEXT, ended TEXT, "
                         "exit_status INTEGER, resource_usage TEXT);"
                         "CREATE TABLE events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, kind TEXT NOT NULL, "
                         "message TEXT NOT NULL, detail TEXT);"),
              SQLITE_OK)
        << probe.last_error();
    ASSERT_EQ(probe.exec("PRAGMA user_version = 1"), SQLITE_OK);
    ASSERT_EQ(probe.exec("INSERT INTO requests (ts, agent, kind, host, port, decision) VALUES "
                         "('2026-01-01T00:00:00.000Z', 'a', 'http', 'evil.example', 80, 'deny')"),
              SQLITE_OK);
    ASSERT_EQ(probe.exec("COMMIT"), SQLITE_OK);
  }
  Handle db(open_for_writing(path, false));
  EXPECT_EQ(schema_version(db.get()), kSchemaVersion);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT count FROM requests"), 1);
  EXPECT_EQ(probe.number("SELECT denied FROM denied_by_host"), 1);
  ASSERT_EQ(probe.exec("UPDATE requests SET count = 5"), SQLITE_OK);
  EXPECT_EQ(probe.number("SELECT denied FROM agent_activity"), 5);
  EXPECT_EQ(probe.number("SELECT requests FROM hourly_traffic"), 5);
}

// A version 2 database (before `sandbox`) is upgraded in place: its agents rows stay,
// with no sandbox recorded, and new rows can carry one.
TEST(AuditSchema, VersionTwoDatabaseKeepsAgentsAndGetsSandbox) {
  test::TempDir dir;
  const auto path = dir.path() / "v2.db";
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("BEGIN"), SQLITE_OK);
    ASSERT_EQ(probe.exec("CREATE TABLE requests (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, agent TEXT NOT NULL, "
                         "client_addr TEXT, kind TEXT NOT NULL, method TEXT, host TEXT NOT NULL, "
                         "port INTEGER NOT NULL, path TEXT, resolved_addr TEXT, decision TEXT NOT NULL, rule TEXT, "
                         "reason TEXT, status INTEGER, bytes_up INTEGER NOT NULL DEFAULT 0, "
                         "bytes_down INTEGER NOT NULL DEFAULT 0, duration_ms INTEGER, error TEXT, "
                         "count INTEGER NOT NULL DEFAULT 1);"
                         "CREATE TABLE agents (id INTEGER PRIMARY KEY, name TEXT NOT NULL, pid INTEGER NOT NULL, "
                         "command_line TEXT, policy_digest TEXT, address TEXT, started TEXT, ended TEXT, "
                         "exit_status INTEGER, resource_usage TEXT);"
                         "CREATE TABLE events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, kind TEXT NOT NULL, "
                         "message TEXT NOT NULL, detail TEXT);"),
              SQLITE_OK)
        << probe.last_error();
    ASSERT_EQ(probe.exec("PRAGMA user_version = 2"), SQLITE_OK);
    ASSERT_EQ(probe.exec("INSERT INTO agents (name, pid, command_line, exit_status) VALUES ('old', 7, 'sh', 0)"),
              SQLITE_OK);
    ASSERT_EQ(probe.exec("COMMIT"), SQLITE_OK);
  }
  Handle db(open_for_writing(path, false));
  EXPECT_EQ(schema_version(db.get()), kSchemaVersion);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT name || ' ' || pid || ' ' || command_line || ' ' || exit_status FROM agents"),
            "old 7 sh 0");
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM agents WHERE sandbox IS NULL"), 1);
  ASSERT_EQ(probe.exec("INSERT INTO agents (name, pid, sandbox) VALUES ('new', 8, '{}')"), SQLITE_OK);
  EXPECT_EQ(probe.text("SELECT sandbox FROM agents WHERE name = 'new'"), "{}");
}

TEST(AuditSchema, EmptyVersionZeroDatabaseIsMigrated) {
  test::TempDir dir;
  const auto path = dir.path() / "old.db";
  {
    // A real SQLite file with a header and no tables: what an interrupted first start leaves.
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("CREATE TABLE scratch (x); DROP TABLE scratch;"), SQLITE_OK);
    ASSERT_EQ(probe.number("PRAGMA user_version"), 0);
  }
  Handle db(open_for_writing(path, false));
  EXPECT_EQ(schema_version(db.get()), kSchemaVersion);
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 0);
}

TEST(AuditSchema, ZeroByteFileIsMigrated) {
  test::TempDir dir;
  const auto path = dir.write("empty.db", "");
  Handle db(open_for_writing(path, false));
  EXPECT_EQ(schema_version(db.get()), kSchemaVersion);
}

TEST(AuditSchema, NewerVersionIsRefusedByWritersAndReaders) {
  test::TempDir dir;
  const auto path = dir.path() / "future.db";
  { Handle db(open_for_writing(path, false)); }
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("PRAGMA user_version = 99"), SQLITE_OK);
  }
  for (const auto& message : {rejection([&] { return open_for_writing(path, false); }),
                              rejection([&] { return open_for_reading(path); })}) {
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("99"), std::string::npos) << message;
    EXPECT_NE(message.find("newer"), std::string::npos) << message;
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("PRAGMA user_version"), 99) << "a refused file must be left alone";
}

TEST(AuditSchema, FileThatIsNotSqliteIsRefusedNamingThePath) {
  test::TempDir dir;
  const auto path = dir.write("notes.db", std::string(4096, 'x') + "this is a text file, not a database\n");
  for (const auto& message : {rejection([&] { return open_for_writing(path, false); }),
                              rejection([&] { return open_for_reading(path); })}) {
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("not an SQLite database"), std::string::npos) << message;
  }
}

TEST(AuditSchema, SomeoneElsesSqliteDatabaseIsNotTakenOver) {
  test::TempDir dir;
  const auto path = dir.path() / "app.db";
  {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("CREATE TABLE users (name TEXT)"), SQLITE_OK);
  }
  const auto message = rejection([&] { return open_for_writing(path, false); });
  EXPECT_NE(message.find("not a netbox audit database"), std::string::npos) << message;
  EXPECT_NE(rejection([&] { return open_for_reading(path); }).find("not a netbox audit database"), std::string::npos);
  SqliteProbe probe(path);
  EXPECT_EQ(names(probe, "table"), (std::set<std::string>{"users"}));
}

TEST(AuditSchema, ReadingAMissingFileNamesItAndCreatesNothing) {
  test::TempDir dir;
  const auto path = dir.path() / "missing.db";
  const auto message = rejection([&] { return open_for_reading(path); });
  EXPECT_NE(message.find("no audit database at " + path.string()), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(AuditSchema, ReaderCannotWrite) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  { Handle db(open_for_writing(path, false)); }
  Handle reader(open_for_reading(path));
  char* err = nullptr;
  const int rc = sqlite3_exec(reader.get(), "DELETE FROM requests", nullptr, nullptr, &err);
  sqlite3_free(err);
  EXPECT_EQ(rc & 0xff, SQLITE_READONLY);
}

}  // namespace
}  // namespace netbox::audit
