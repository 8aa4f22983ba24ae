// The dashboard's totals read from a real store: totals by decision, the most denied hosts
// with their reasons, activity per agent; NULL columns, an empty store, limits, and filter
// values written to break out of the SQL.
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/writer.hpp"
#include "sqlite_probe.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;
using namespace std::chrono_literals;

const Clock::time_point kT0 = Clock::time_point{} + std::chrono::milliseconds(1795320000000);  // 2026-11-22T04:00:00Z

Filter everything() {
  Filter f;
  f.limit = 0;
  return f;
}

class AuditAggregates : public ::testing::Test {
 protected:
  void SetUp() override {
    WriterOptions o;
    o.db_path = path;
    Writer writer(o);
    add(writer, request("builder", "api.example.com", "allow", kT0), 100, 1000);
    add(writer, request("builder", "api.example.com", "allow", kT0 + 1min), 50, 500);
    // The later denial is written first: its rule must still be the one reported.
    add(writer, denial("builder", "x.evil.example", "x.evil.example matches deny[0] *.evil.example", "deny[3] *.evil.example",
                       kT0 + 4min));
    add(writer, denial("builder", "x.evil.example", "x.evil.example matches deny[0] *.evil.example", "deny[0] *.evil.example",
                       kT0 + 2min));
    add(writer, request("builder", "files.example.com", "report", kT0 + 61min), 7, 70);
    add(writer, denial("tester", "x.evil.example", "x.evil.example is not in allow", "", kT0 + 3min));
    add(writer, denial("tester", "y.evil.example", "y.evil.example matches deny[0] *.evil.example", "deny[0] *.evil.example",
                       kT0 + 5min));
    add(writer, request("tester", "api.example.com", "allow", kT0 + 62min), 1, 2);
  }

  static AuditRecord denial(std::string agent, std::string host, std::string reason, std::string rule,
                            Clock::time_point ts) {
    auto r = request(std::move(agent), std::move(host), "deny", ts);
    r.reason = std::move(reason);
    r.rule = std::move(rule);
    return r;
  }

  static void add(Writer& w, AuditRecord r, std::uint64_t up = 0, std::uint64_t down = 0) {
    const auto h = w.insert(std::move(r));
    Completion c;
    c.bytes_up = up;
    c.bytes_down = down;
    w.complete(h, c);
  }

  // A row as SQL writes it: every nullable column NULL, `count` requests folded into it.
  void add_raw(const std::string& agent, const std::string& host, const std::string& decision, int count,
               const std::string& ts = "2026-11-22T04:30:00.000Z") {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("INSERT INTO requests (ts, agent, kind, host, port, decision, count) VALUES ('" + ts + "', '" +
                         agent + "', 'http', '" + host + "', 80, '" + decision + "', " + std::to_string(count) + ")"),
              SQLITE_OK)
        << probe.last_error();
  }

  test::TempDir dir;
  std::filesystem::path path = dir.path() / "audit.db";
};

TEST_F(AuditAggregates, TotalsCountEveryDecisionInTheStoreAndEveryFoldedRequest) {
  add_raw("flooder", "z.evil.example", "deny", 40);
  // A decision this build does not list (a newer writer's) is still counted, not dropped.
  add_raw("builder", "api.example.com", "cap", 2);
  const auto t = totals(path, everything());
  ASSERT_EQ(t.decisions.size(), 4u);
  EXPECT_EQ(t.decisions[0].decision, "allow") << "name order";
  EXPECT_EQ(count_of(t.decisions, "allow"), 3u);
  EXPECT_EQ(count_of(t.decisions, "deny"), 44u);
  EXPECT_EQ(count_of(t.decisions, "report"), 1u);
  EXPECT_EQ(count_of(t.decisions, "cap"), 2u);
  EXPECT_EQ(count_of(t.decisions, "error"), 0u);
  EXPECT_EQ(t.requests, 50u);
  EXPECT_EQ(t.bytes_up, 158u);
  EXPECT_EQ(t.bytes_down, 1572u);

  Filter late = everything();
  late.since = kT0 + 61min;
  late.agent = "tester";
  const auto lt = totals(path, late);
  EXPECT_EQ(lt.requests, 1u);
  EXPECT_EQ(count_of(lt.decisions, "allow"), 1u);
  EXPECT_EQ(lt.bytes_down, 2u);
}

TEST_F(AuditAggregates, TopDeniedGroupsEachHostsDenialsByReasonWithTheLatestRule) {
  const auto hosts = top_denied(path, everything());
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "x.evil.example");
  EXPECT_EQ(hosts[0].requests, 3u);
  ASSERT_EQ(hosts[0].reasons.size(), 2u);
  EXPECT_EQ(hosts[0].reasons[0].reason, "x.evil.example matches deny[0] *.evil.example") << "most frequent first";
  EXPECT_EQ(hosts[0].reasons[0].requests, 2u);
  EXPECT_EQ(hosts[0].reasons[0].rule, "deny[3] *.evil.example") << "the rule of the latest denial with that reason";
  EXPECT_EQ(hosts[0].reasons[0].last_seen, kT0 + 4min);
  EXPECT_EQ(hosts[0].reasons[1].reason, "x.evil.example is not in allow");
  EXPECT_EQ(hosts[0].reasons[1].rule, "") << "NULL in the store";
  EXPECT_EQ(hosts[1].host, "y.evil.example");
  EXPECT_EQ(hosts[1].requests, 1u);
}

TEST_F(AuditAggregates, TopDeniedReasonsFollowTheFilterAndIgnoreItsDecision) {
  Filter tester = everything();
  tester.agent = "tester";
  tester.decision = "allow";  // the top denied are denials whatever the rest of the page filters
  const auto hosts = top_denied(path, tester);
  ASSERT_EQ(hosts.size(), 2u);
  for (const auto& h : hosts) {
    EXPECT_EQ(h.requests, 1u) << h.host;
    ASSERT_EQ(h.reasons.size(), 1u) << h.host;
  }
  // builder's reason for x.evil.example is not tester's.
  EXPECT_EQ(hosts[0].host, "x.evil.example");
  EXPECT_EQ(hosts[0].reasons[0].reason, "x.evil.example is not in allow");
}

TEST_F(AuditAggregates, TopDeniedLimitsHostsAndReasons) {
  Filter one = everything();
  one.limit = 1;
  ASSERT_EQ(top_denied(path, one).size(), 1u);
  // More distinct reasons for one host than are kept: the most frequent stay.
  for (std::size_t i = 0; i < kReasonsPerDeniedHost + 3; ++i) {
    SqliteProbe probe(path);
    ASSERT_EQ(probe.exec("INSERT INTO requests (ts, agent, kind, host, port, decision, reason, count) VALUES "
                         "('2026-11-22T05:00:00.000Z', 'a', 'http', 'many.example', 80, 'deny', 'reason " +
                         std::to_string(i) + "', " + std::to_string(100 + i) + ")"),
              SQLITE_OK);
  }
  const auto hosts = top_denied(path, one);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].host, "many.example");
  EXPECT_EQ(hosts[0].requests, (kReasonsPerDeniedHost + 3) * 100 + (kReasonsPerDeniedHost + 2) * (kReasonsPerDeniedHost + 3) / 2);
  ASSERT_EQ(hosts[0].reasons.size(), kReasonsPerDeniedHost);
  EXPECT_EQ(hosts[0].reasons[0].reason, "reason " + std::to_string(kReasonsPerDeniedHost + 2));
  EXPECT_EQ(top_denied(path, everything()).size(), 3u) << "limit 0: every host";
}

TEST_F(AuditAggregates, AgentActivityMostRecentlySeenFirst) {
  add_raw("flooder", "z.evil.example", "deny", 40, "2026-11-22T03:50:00.000Z");
  const auto agents = agent_activity(path, everything());
  ASSERT_EQ(agents.size(), 3u);
  EXPECT_EQ(agents[0].agent, "tester");
  EXPECT_EQ(agents[0].last_seen, kT0 + 62min);
  EXPECT_EQ(agents[0].requests, 3u);
  EXPECT_EQ(count_of(agents[0].decisions, "deny"), 2u);
  EXPECT_EQ(agents[1].agent, "builder");
  EXPECT_EQ(agents[1].requests, 5u);
  EXPECT_EQ(count_of(agents[1].decisions, "allow"), 2u);
  EXPECT_EQ(count_of(agents[1].decisions, "report"), 1u);
  EXPECT_EQ(agents[1].bytes_up, 157u);
  EXPECT_EQ(agents[1].bytes_down, 1570u);
  EXPECT_EQ(agents[2].agent, "flooder");
  EXPECT_EQ(agents[2].requests, 40u);
  EXPECT_EQ(agents[2].bytes_up, 0u);

  Filter one = everything();
  one.limit = 1;
  ASSERT_EQ(agent_activity(path, one).size(), 1u);
  Filter denied = everything();
  denied.decision = "deny";
  denied.since = kT0 + 4min;
  const auto recent = agent_activity(path, denied);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0].agent, "tester");
  EXPECT_EQ(recent[0].last_seen, kT0 + 5min);
  EXPECT_EQ(recent[1].agent, "builder");
}

TEST(AuditAggregatesEmpty, AnEmptyStoreHasZeroTotalsAndNoRows) {
  test::TempDir dir;
  const auto path = dir.path() / "audit.db";
  {
    WriterOptions o;
    o.db_path = path;
    Writer writer(o);
  }
  const auto t = totals(path, everything());
  EXPECT_TRUE(t.decisions.empty());
  EXPECT_EQ(t.requests, 0u);
  EXPECT_EQ(t.bytes_up, 0u);
  EXPECT_EQ(count_of(t.decisions, "deny"), 0u);
  EXPECT_TRUE(top_denied(path, everything()).empty());
  EXPECT_TRUE(agent_activity(path, everything()).empty());
  EXPECT_TRUE(query_requests(path, everything()).empty());
  EXPECT_THROW(totals(dir.path() / "absent.db", everything()), DatabaseRejected);
  EXPECT_THROW(top_denied(dir.path() / "absent.db", everything()), DatabaseRejected);
  EXPECT_THROW(agent_activity(dir.path() / "absent.db", everything()), DatabaseRejected);
}

TEST_F(AuditAggregates, NullColumnsReadBackEmptyAndJsonSaysNull) {
  add_raw("bare", "bare.example", "deny", 1);
  Filter bare = everything();
  bare.agent = "bare";
  const auto rows = query_requests(path, bare);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].client_addr, "");
  EXPECT_EQ(rows[0].reason, "");
  EXPECT_FALSE(rows[0].status.has_value());
  EXPECT_FALSE(rows[0].duration_ms.has_value());
  const auto json = format_requests(rows, "json");
  for (const char* column : {"client_addr", "method", "path", "resolved_addr", "rule", "reason", "status",
                             "duration_ms", "error"})
    EXPECT_NE(json.find("\"" + std::string(column) + "\": null"), std::string::npos) << column << " in " << json;
  const auto hosts = top_denied(path, bare);
  ASSERT_EQ(hosts.size(), 1u);
  ASSERT_EQ(hosts[0].reasons.size(), 1u);
  EXPECT_EQ(hosts[0].reasons[0].reason, "");
  EXPECT_EQ(hosts[0].reasons[0].rule, "");
}

// Each value is bound as a parameter: text written to end the string and widen the WHERE
// clause matches nothing, and the store is as it was.
TEST_F(AuditAggregates, HostileFilterValuesAreOnlyValues) {
  const std::vector<std::string> hostile = {
      "x' OR '1'='1",
      "' OR 1=1 --",
      "builder' --",
      "\") OR 1=1; DROP TABLE requests; --",
      std::string("builder\0' OR '1'='1", 19),
      "*",  // a glob in an exact-match field is just a star
  };
  for (const auto& value : hostile) {
    Filter by_agent = everything();
    by_agent.agent = value;
    EXPECT_TRUE(query_requests(path, by_agent).empty()) << value;
    EXPECT_EQ(totals(path, by_agent).requests, 0u) << value;
    EXPECT_TRUE(top_denied(path, by_agent).empty()) << value;
    EXPECT_TRUE(agent_activity(path, by_agent).empty()) << value;
    EXPECT_TRUE(summarize(path, by_agent).empty()) << value;
    Filter by_decision = everything();
    by_decision.decision = value;
    EXPECT_EQ(totals(path, by_decision).requests, 0u) << value;
    EXPECT_TRUE(agent_activity(path, by_decision).empty()) << value;
    if (value != "*") {
      Filter by_host = everything();
      by_host.host_glob = value;
      EXPECT_EQ(totals(path, by_host).requests, 0u) << value;
      EXPECT_TRUE(top_denied(path, by_host).empty()) << value;
    }
    EXPECT_THROW(parse_decision(value), std::invalid_argument) << value;
  }
  EXPECT_EQ(totals(path, everything()).requests, 8u) << "the store is untouched";
}

TEST(AuditDecisionFilter, NamesTheValueAndTheChoices) {
  EXPECT_EQ(parse_decision("deny"), "deny");
  EXPECT_EQ(parse_decision("report"), "report");
  EXPECT_EQ(parse_decision("cap"), "cap");
  EXPECT_EQ(parse_decision("error"), "error");
  EXPECT_EQ(parse_decision("budget"), "budget");
  try {
    parse_decision("maybe");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "'maybe' is not one of allow, report, deny, cap, error, budget");
  }
  EXPECT_THROW(parse_decision("DENY"), std::invalid_argument);
  EXPECT_THROW(parse_decision(""), std::invalid_argument);
}

// The chart's buckets: aligned to the epoch, each request (and each folded one) in the
// bucket of its ts, per decision; empty buckets absent; the filter applies.
TEST_F(AuditAggregates, ATimelineCountsEachDecisionInTheBucketOfItsTime) {
  add_raw("flooder", "z.evil.example", "deny", 40, "2026-11-22T04:02:59.999Z");
  const auto points = timeline(path, everything(), 10min);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].start, kT0) << format_timestamp(points[0].start);
  EXPECT_EQ(points[1].start, kT0 + 60min);
  EXPECT_EQ(count_of(points[0].decisions, "allow"), 2u);
  EXPECT_EQ(count_of(points[0].decisions, "deny"), 44u) << "four rows and one folded row of 40";
  EXPECT_EQ(count_of(points[1].decisions, "report"), 1u);
  EXPECT_EQ(count_of(points[1].decisions, "allow"), 1u);

  const auto minutes = timeline(path, everything(), 1min);
  ASSERT_EQ(minutes.size(), 8u) << "one bucket per minute that has a request";
  EXPECT_EQ(minutes[2].start, kT0 + 2min);
  EXPECT_EQ(count_of(minutes[2].decisions, "deny"), 41u);

  Filter tester = everything();
  tester.agent = "tester";
  tester.since = kT0 + 4min;
  const auto only = timeline(path, tester, 10min);
  ASSERT_EQ(only.size(), 2u);
  EXPECT_EQ(count_of(only[0].decisions, "deny"), 1u);
  EXPECT_EQ(count_of(only[1].decisions, "allow"), 1u);
  Filter hostile = everything();
  hostile.agent = "x' OR '1'='1";
  EXPECT_TRUE(timeline(path, hostile, 1min).empty());
}

}  // namespace
}  // namespace netbox::audit
