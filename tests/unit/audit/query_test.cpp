// Reading the store: filters, newest-first order, the summary and the SQL views.
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;
using namespace std::chrono_literals;

const Clock::time_point kT0 = Clock::time_point{} + std::chrono::milliseconds(1795320000000);  // 2026-11-22T04:00:00Z

class AuditQuery : public ::testing::Test {
 protected:
  void SetUp() override {
    WriterOptions o;
    o.db_path = path;
    Writer writer(o);
    // builder: two allowed to api (one completed with bytes), one denied to evil, an hour later one report.
    add(writer, request("builder", "api.example.com", "allow", kT0), 100, 1000);
    add(writer, request("builder", "api.example.com", "allow", kT0 + 1min), 50, 500);
    add(writer, request("builder", "x.evil.example", "deny", kT0 + 2min), 0, 0);
    add(writer, request("builder", "files.example.com", "report", kT0 + 61min), 7, 70);
    // tester: one deny, one allow.
    add(writer, request("tester", "y.evil.example", "deny", kT0 + 3min), 0, 0);
    add(writer, request("tester", "api.example.com", "allow", kT0 + 62min), 1, 2);
  }

  static void add(Writer& w, AuditRecord r, std::uint64_t up, std::uint64_t down) {
    const auto h = w.insert(std::move(r));
    Completion c;
    c.bytes_up = up;
    c.bytes_down = down;
    w.complete(h, c);
  }

  std::vector<std::string> hosts(const Filter& f) {
    std::vector<std::string> out;
    for (const auto& r : query_requests(path, f)) out.push_back(r.agent + "/" + r.host);
    return out;
  }

  test::TempDir dir;
  std::filesystem::path path = dir.path() / "audit.db";
};

TEST_F(AuditQuery, NewestFirstWithEveryColumnReadBack) {
  const auto rows = query_requests(path, Filter{});
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].host, "api.example.com");
  EXPECT_EQ(rows[0].agent, "tester");
  EXPECT_EQ(rows[0].ts, kT0 + 62min);
  EXPECT_EQ(rows[5].ts, kT0);
  EXPECT_EQ(rows[5].bytes_up, 100u);
  EXPECT_EQ(rows[5].bytes_down, 1000u);
  EXPECT_EQ(rows[5].client_addr, "10.213.0.2:41234");
  EXPECT_EQ(rows[5].path, "/index.html");
  EXPECT_EQ(rows[5].port, 80);
  EXPECT_FALSE(rows[5].status.has_value());
  EXPECT_GT(rows[0].id, rows[5].id);
}

TEST_F(AuditQuery, FiltersCombine) {
  Filter by_agent;
  by_agent.agent = "tester";
  EXPECT_EQ(hosts(by_agent), (std::vector<std::string>{"tester/api.example.com", "tester/y.evil.example"}));

  Filter denied;
  denied.decision = "deny";
  EXPECT_EQ(hosts(denied), (std::vector<std::string>{"tester/y.evil.example", "builder/x.evil.example"}));

  Filter glob;
  glob.host_glob = "*.evil.example";
  glob.agent = "builder";
  EXPECT_EQ(hosts(glob), (std::vector<std::string>{"builder/x.evil.example"}));

  Filter recent;
  recent.since = kT0 + 61min;
  EXPECT_EQ(hosts(recent), (std::vector<std::string>{"tester/api.example.com", "builder/files.example.com"}));

  Filter limited;
  limited.limit = 2;
  EXPECT_EQ(hosts(limited).size(), 2u);
  limited.limit = 0;
  EXPECT_EQ(hosts(limited).size(), 6u) << "0 means no limit";
}

TEST_F(AuditQuery, HostGlobIsOnlyAGlob) {
  Filter f;
  f.host_glob = "x' OR '1'='1";
  EXPECT_TRUE(query_requests(path, f).empty());
  f.host_glob = "API.EXAMPLE.COM";
  EXPECT_TRUE(query_requests(path, f).empty()) << "hosts are stored normalised, GLOB is case-sensitive";
}

TEST_F(AuditQuery, SummaryPerAgentAndHost) {
  Filter all;
  all.limit = 0;
  const auto rows = summarize(path, all);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].agent, "builder") << "the busiest pair comes first";
  EXPECT_EQ(rows[0].host, "api.example.com");
  EXPECT_EQ(rows[0].allowed, 2u);
  EXPECT_EQ(rows[0].denied, 0u);
  EXPECT_EQ(rows[0].bytes_up, 150u);
  EXPECT_EQ(rows[0].bytes_down, 1500u);
  auto find = [&](const std::string& agent, const std::string& host) {
    return *std::find_if(rows.begin(), rows.end(),
                         [&](const SummaryRow& r) { return r.agent == agent && r.host == host; });
  };
  EXPECT_EQ(find("builder", "x.evil.example").denied, 1u);
  EXPECT_EQ(find("builder", "files.example.com").reported, 1u);
  EXPECT_EQ(find("tester", "api.example.com").allowed, 1u);

  Filter tester_denied;
  tester_denied.agent = "tester";
  tester_denied.decision = "deny";
  const auto only = summarize(path, tester_denied);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].host, "y.evil.example");
  EXPECT_EQ(only[0].denied, 1u);
}

TEST_F(AuditQuery, ViewsForSecurityTeams) {
  SqliteProbe probe(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(probe.text("SELECT group_concat(host || ':' || denied || ':' || agents, ' ') FROM denied_by_host"),
            "x.evil.example:1:1 y.evil.example:1:1");
  EXPECT_EQ(probe.text("SELECT requests || ' ' || allowed || ' ' || denied || ' ' || reported || ' ' || hosts || ' ' "
                       "|| bytes_up || ' ' || bytes_down || ' ' || first_seen || ' ' || last_seen "
                       "FROM agent_activity WHERE agent = 'builder'"),
            "4 2 1 1 3 157 1570 2026-11-22T04:00:00.000Z 2026-11-22T05:01:00.000Z");
  EXPECT_EQ(probe.text("SELECT group_concat(hour || '=' || requests || '/' || denied, ' ') FROM hourly_traffic"),
            "2026-11-22T04:00Z=4/2 2026-11-22T05:00Z=2/0");
}

TEST_F(AuditQuery, MissingDatabaseIsNamed) {
  try {
    query_requests(dir.path() / "nope.db", Filter{});
    FAIL();
  } catch (const DatabaseRejected& e) {
    EXPECT_NE(std::string(e.what()).find("nope.db"), std::string::npos) << e.what();
  }
  EXPECT_THROW(summarize(dir.path() / "nope.db", Filter{}), DatabaseRejected);
}

}  // namespace
}  // namespace netbox::audit
