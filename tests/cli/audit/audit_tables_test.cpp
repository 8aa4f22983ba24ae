// `netbox audit events` and `netbox audit agents` (issue 27 item 6): filters like the
// rest, and table, json and csv with the same columns; `netbox gc` closing the rows a
// dead launcher left open, and leaving a live one's alone.
#include "netbox/audit/writer.hpp"
#include "support/process.hpp"
#include "support/sample_records.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <sstream>

namespace netbox::audit {
namespace {

using namespace std::chrono_literals;
using test::query;
using test::run_netbox;
using ::testing::HasSubstr;
using ::testing::Not;

void fill(const std::filesystem::path& db) {
  WriterOptions o;
  o.db_path = db;
  Writer w(o);
  const auto now = Clock::now();
  w.event(Event{now - 2h, "policy_load", "loaded policy.json", ""});
  Event leak{now - 1h, "exfiltration_attempt", "agent learner sent a credential placeholder to evil.test",
             R"({"agent":"learner","host":"evil.test"})"};
  leak.agent = "learner";
  leak.fold_key = "evil.test";
  w.event(leak);
  w.agent_started(AgentRecord{"learner", 4242, "sh -c x", "d1", "", now - 3h, R"({"mode":"report"})"});
  w.agent_exited(AgentExit{"learner", 4242, now - 2h, 0, R"({"user_ms":1})"});
  w.agent_started(AgentRecord{"worker", 4343, "sh -c y", "d2", "", now - 30min, R"({"mode":"enforce"})"});
  w.flush();
}

// RFC 4180: records end with CRLF.
std::string header_of_csv(const std::string& csv) { return csv.substr(0, csv.find("\r\n")); }

std::string keys_of_json(const std::string& text) {
  const auto j = nlohmann::ordered_json::parse(text);
  std::string keys;
  for (const auto& [k, v] : j.at(0).items()) keys += (keys.empty() ? "" : ",") + k;
  return keys;
}

TEST(AuditTables, EventsFilteredByKindAndSinceInEveryFormatWithTheSameColumns) {
  test::TempDir dir;
  const auto db = dir.path() / "a.db";
  fill(db);
  auto table = run_netbox({"audit", "events", "--db", db.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("exfiltration_attempt"));
  EXPECT_THAT(table.out, HasSubstr("policy_load"));
  EXPECT_LT(table.out.find("exfiltration_attempt"), table.out.find("policy_load")) << "newest first";
  auto json = run_netbox({"audit", "events", "--db", db.string(), "--kind", "exfiltration_attempt", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 1u) << json.out;
  EXPECT_EQ(j[0]["kind"], "exfiltration_attempt");
  EXPECT_EQ(j[0]["count"], 1);
  auto csv = run_netbox({"audit", "events", "--db", db.string(), "--since", "90m", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("exfiltration_attempt"));
  EXPECT_THAT(csv.out, Not(HasSubstr("policy_load"))) << "--since";
  EXPECT_EQ(header_of_csv(csv.out), keys_of_json(json.out));
  auto bad = run_netbox({"audit", "events", "--db", db.string(), "--format", "xml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--format 'xml'"));
  auto none = run_netbox({"audit", "events", "--db", (dir.path() / "missing.db").string()});
  EXPECT_EQ(none.exit_code, 2);
}

TEST(AuditTables, AgentsShowModeAndEndFilteredByNameAndRunning) {
  test::TempDir dir;
  const auto db = dir.path() / "a.db";
  fill(db);
  auto json = run_netbox({"audit", "agents", "--db", db.string(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 2u) << json.out;
  EXPECT_EQ(j[0]["name"], "worker");  // newest first
  EXPECT_TRUE(j[0]["ended"].is_null());
  EXPECT_EQ(j[1]["name"], "learner");
  EXPECT_EQ(j[1]["mode"], "report");
  EXPECT_EQ(j[1]["exit_status"], 0);
  EXPECT_EQ(j[1]["end_reason"], "exited");
  auto csv = run_netbox({"audit", "agents", "--db", db.string(), "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(header_of_csv(csv.out), keys_of_json(json.out));
  auto running = run_netbox({"audit", "agents", "--db", db.string(), "--running"});
  ASSERT_EQ(running.exit_code, 0) << running.err;
  EXPECT_THAT(running.out, HasSubstr("worker"));
  EXPECT_THAT(running.out, Not(HasSubstr("learner")));
  auto named = run_netbox({"audit", "agents", "--db", db.string(), "--agent", "learner", "--format", "text"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_THAT(named.out, HasSubstr("report"));
  EXPECT_THAT(named.out, Not(HasSubstr("worker")));
  // `netbox audit` itself still lists requests.
  auto requests = run_netbox({"audit", "--db", db.string()});
  EXPECT_EQ(requests.exit_code, 0) << requests.err;
  EXPECT_THAT(requests.out, HasSubstr("no matching requests"));
}

TEST(AuditGc, ClosesADeadLaunchsAgentRowAndOpenRequestsAndLeavesALiveOnesAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "netbox gc runs as root";
  test::TempDir dir;
  const auto db = dir.path() / "a.db";
  {
    WriterOptions o;
    o.db_path = db;
    Writer w(o);
    const auto now = Clock::now();
    // A pid no process has (above the kernel's pid_max), and this test's own, running.
    w.agent_started(AgentRecord{"dead", 2147483600, "sh", "", "", now - 1h, ""});
    w.agent_started(AgentRecord{"alive", ::getpid(), "sh", "", "", now, ""});
    w.insert(testing::request("dead", "open.test", "allow", now - 30min));
    w.insert(testing::request("alive", "open.test", "allow", now));
    w.flush();
  }
  auto gc = run_netbox({"gc", "--audit-db", db.string()});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("closed agent dead (pid 2147483600, 1 open requests)"));
  EXPECT_EQ(query(db, "SELECT name, ended IS NOT NULL, json_extract(resource_usage, '$.ended_by') FROM agents ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"dead", "1", "gc"}, {"alive", "0", ""}}));
  EXPECT_EQ(query(db, "SELECT agent, duration_ms IS NOT NULL, IFNULL(error, '') LIKE 'closed by netbox gc: its launcher died%' "
                      "FROM requests ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"dead", "1", "1"}, {"alive", "0", "0"}}));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM events WHERE kind = 'agent_closed'"),
            (std::vector<std::vector<std::string>>{{"1"}}));
  auto agents = run_netbox({"audit", "agents", "--db", db.string(), "--format", "json"});
  EXPECT_THAT(agents.out, HasSubstr("its launcher died")) << agents.out;
  // The rows gc changed are linked into the audit chain like the writer's: the store verifies.
  auto verify = run_netbox({"audit", "verify", "--db", db.string()});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  // Once closed, a second run has nothing to do.
  auto again = run_netbox({"gc", "--audit-db", db.string()});
  EXPECT_THAT(again.out, Not(HasSubstr("closed agent"))) << again.out;
}

}  // namespace
}  // namespace netbox::audit
