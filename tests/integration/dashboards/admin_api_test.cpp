// The admin endpoint over a real audit database and real HTTP on loopback.
#include "netbox/audit/query.hpp"
#include "netbox/audit/writer.hpp"
#include "netbox/dashboards/admin_server.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace netbox;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using json = nlohmann::json;

namespace {

http::response<http::string_body> send(const tcp::endpoint& ep, http::request<http::string_body> req) {
  boost::asio::io_context ioc;
  tcp::socket s(ioc);
  s.connect(ep);
  if (req[http::field::host].empty()) req.set(http::field::host, "127.0.0.1");
  req.prepare_payload();
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res);
  return res;
}

http::response<http::string_body> get(const tcp::endpoint& ep, const std::string& target,
                                      const std::string& auth = {}, const std::string& host = {}) {
  http::request<http::string_body> req{http::verb::get, target, 11};
  if (!host.empty()) req.set(http::field::host, host);
  if (!auth.empty()) req.set(http::field::authorization, auth);
  return send(ep, std::move(req));
}

audit::AuditRecord row(std::string agent, std::string host, std::string decision, std::string reason = {}) {
  auto r = audit::testing::request(std::move(agent), std::move(host), std::move(decision));
  r.reason = std::move(reason);
  r.rule = r.decision == "deny" ? "deny[0] *.evil.test" : "allow[0] api.test";
  r.status = r.decision == "deny" ? 403 : 200;
  return r;
}

class AdminApi : public ::testing::Test {
 protected:
  void SetUp() override {
    db = dir.path() / "audit.db";
    audit::WriterOptions wo;
    wo.db_path = db;
    writer = std::make_unique<audit::Writer>(wo);
    auto h = writer->insert(row("coder", "api.test", "allow"));
    audit::Completion c;
    c.status = 200;
    c.bytes_up = 100;
    c.bytes_down = 5000;
    c.duration_ms = 12;
    writer->complete(h, c);
    writer->insert(row("coder", "api.test", "allow"));
    writer->insert(row("coder", "x.evil.test", "deny", "x.evil.test matches deny[0] *.evil.test"));
    writer->insert(row("analyst", "x.evil.test", "deny", "x.evil.test matches deny[0] *.evil.test"));
    writer->insert(row("analyst", "y.evil.test", "deny", "y.evil.test matches deny[0] *.evil.test"));
    writer->flush();
  }
  void start(std::string token = {}) {
    dashboards::AdminOptions o;
    o.listen = tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0);
    o.audit_db = db;
    o.bearer_token = std::move(token);
    o.metrics = [] { return std::string("netbox_up 1\n"); };
    o.live = [] { return dashboards::LiveStats{7, 3, 0, 2, 1, 10, 20}; };
    o.ready = [this] { return ready; };
    o.approvals = [this](const std::string& line) {
      answered.push_back(line);
      return std::string(R"({"ok":true})");
    };
    server = std::make_unique<dashboards::AdminServer>(o);
    ep = server->local_endpoint();
  }
  test::TempDir dir;
  std::filesystem::path db;
  std::unique_ptr<audit::Writer> writer;
  std::unique_ptr<dashboards::AdminServer> server;
  tcp::endpoint ep;
  bool ready = true;
  std::vector<std::string> answered;  // approval op lines that reached the proxy
};

}  // namespace

TEST_F(AdminApi, SummaryCountsDecisionsBytesAndTopDeniedHostsWithReasons) {
  start();
  auto res = get(ep, "/api/summary?since=1h");
  ASSERT_EQ(res.result_int(), 200) << res.body();
  auto j = json::parse(res.body());
  EXPECT_EQ(j["totals"]["allow"], 2);
  EXPECT_EQ(j["totals"]["deny"], 3);
  EXPECT_EQ(j["totals"]["bytes_down"], 5000);
  ASSERT_GE(j["top_denied"].size(), 2u);
  EXPECT_EQ(j["top_denied"][0]["host"], "x.evil.test");
  EXPECT_EQ(j["top_denied"][0]["count"], 2);
  ASSERT_EQ(j["top_denied"][0]["reasons"].size(), 1u);
  EXPECT_EQ(j["top_denied"][0]["reasons"][0]["reason"], "x.evil.test matches deny[0] *.evil.test");
  EXPECT_EQ(j["top_denied"][0]["reasons"][0]["rule"], "deny[0] *.evil.test");
  EXPECT_EQ(j["top_denied"][0]["reasons"][0]["count"], 2);
  EXPECT_EQ(j["live"]["requests"]["allow"], 7);
  EXPECT_EQ(j["live"]["active_connections"], 2);
}

TEST_F(AdminApi, AgentsAndRequestsHonourFilters) {
  start();
  auto agents = json::parse(get(ep, "/api/agents").body());
  ASSERT_EQ(agents.size(), 2u);
  for (auto& a : agents) {
    if (a["agent"] == "coder") {
      EXPECT_EQ(a["requests"], 3);
      EXPECT_EQ(a["denied"], 1);
    } else {
      EXPECT_EQ(a["agent"], "analyst");
      EXPECT_EQ(a["denied"], 2);
    }
  }
  auto denied = json::parse(get(ep, "/api/requests?decision=deny&agent=analyst").body());
  ASSERT_EQ(denied.size(), 2u);
  EXPECT_EQ(denied[0]["host"], "y.evil.test") << "newest first";
  auto by_host = json::parse(get(ep, "/api/requests?host=*.evil.test&limit=1").body());
  EXPECT_EQ(by_host.size(), 1u);
}

// Refusals folded into counted rows (audit::Writer) still count one each in every total.
TEST_F(AdminApi, FoldedRefusalsCountOneEach) {
  for (int i = 0; i < 100; ++i)
    writer->insert_complete(row("flooder", "z.evil.test", "deny", "z.evil.test denied"));
  writer->flush();
  start();
  auto summary = json::parse(get(ep, "/api/summary").body());
  EXPECT_EQ(summary["totals"]["deny"], 103);
  EXPECT_EQ(summary["top_denied"][0]["host"], "z.evil.test");
  EXPECT_EQ(summary["top_denied"][0]["count"], 100);
  for (auto& a : json::parse(get(ep, "/api/agents").body()))
    if (a["agent"] == "flooder") {
      EXPECT_EQ(a["requests"], 100);
      EXPECT_EQ(a["denied"], 100);
    }
  std::int64_t total = 0;
  for (auto& r : json::parse(get(ep, "/api/requests?agent=flooder&limit=1000").body()))
    total += r["count"].get<std::int64_t>();
  EXPECT_EQ(total, 100);
}

// The chart's data: the store's requests in round buckets over the window, so a page
// opened after the traffic still draws it. The rows of SetUp are all "now".
TEST_F(AdminApi, TimelineCountsTheWindowsRequestsPerBucketAndFollowsTheFilters) {
  start();
  auto res = get(ep, "/api/timeline?since=1h");
  ASSERT_EQ(res.result_int(), 200) << res.body();
  auto j = json::parse(res.body());
  EXPECT_EQ(j["bucket_seconds"], 30) << "an hour in about 120 round buckets";
  EXPECT_NEAR(j["to"].get<double>() - j["from"].get<double>(), 3600, 5);
  std::int64_t allow = 0, deny = 0;
  for (const auto& p : j["points"]) {
    EXPECT_EQ(p["t"].get<std::int64_t>() % 30, 0) << p;
    EXPECT_GE(p["t"].get<std::int64_t>() + 30, j["from"].get<std::int64_t>()) << p;
    allow += p["allow"].get<std::int64_t>();
    deny += p["deny"].get<std::int64_t>();
  }
  EXPECT_EQ(allow, 2);
  EXPECT_EQ(deny, 3);

  j = json::parse(get(ep, "/api/timeline?since=1w&agent=analyst").body());
  EXPECT_EQ(j["bucket_seconds"], 7200);
  ASSERT_EQ(j["points"].size(), 1u) << j;
  EXPECT_EQ(j["points"][0]["allow"], 0);
  EXPECT_EQ(j["points"][0]["deny"], 2);
  EXPECT_EQ(json::parse(get(ep, "/api/timeline").body())["bucket_seconds"], 30) << "the last hour by default";
  EXPECT_EQ(get(ep, "/api/timeline?since=soon").result_int(), 400);
}

// The events panel and an agent's launches: the store's other tables, as `netbox audit
// events` / `netbox audit agents --format json` print them, filtered.
TEST_F(AdminApi, EventsAndAnAgentsLaunchesComeFromTheirTables) {
  const auto now = audit::Clock::now();
  writer->event({now - std::chrono::hours(3), "policy_loaded", "policy loaded", "{}"});
  writer->event({now, "exfiltration_attempt", "a credential placeholder went to x.evil.test", "{}"});
  writer->agent_started({"coder", 4242, "claude --print hi", "abc", "", now - std::chrono::minutes(5), "{\"mode\":\"report\"}"});
  writer->agent_exited({"coder", 4242, now - std::chrono::minutes(1), 0, "{}"});
  writer->agent_started({"analyst", 77, "python3 agent.py", "abc", "", now, ""});
  writer->flush();
  start();
  auto res = get(ep, "/api/events?since=1h");
  ASSERT_EQ(res.result_int(), 200) << res.body();
  auto events = json::parse(res.body());
  ASSERT_EQ(events.size(), 1u) << events;
  EXPECT_EQ(events[0]["kind"], "exfiltration_attempt");
  EXPECT_EQ(events[0]["count"], 1);
  EXPECT_EQ(json::parse(get(ep, "/api/events?since=1d").body()).size(), 2u);
  EXPECT_EQ(json::parse(get(ep, "/api/events?kind=policy_loaded").body()).size(), 1u);

  auto launches = json::parse(get(ep, "/api/launches?agent=coder").body());
  ASSERT_EQ(launches.size(), 1u) << launches;
  EXPECT_EQ(launches[0]["name"], "coder");
  EXPECT_EQ(launches[0]["command_line"], "claude --print hi");
  EXPECT_EQ(launches[0]["mode"], "report");
  EXPECT_EQ(launches[0]["exit_status"], 0);
  EXPECT_FALSE(launches[0]["ended"].is_null());
  auto all = json::parse(get(ep, "/api/launches").body());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["name"], "analyst") << "newest first";
  EXPECT_TRUE(all[0]["ended"].is_null());
  EXPECT_TRUE(json::parse(get(ep, "/api/launches?agent=x'%20OR%20'1'='1").body()).empty());
  EXPECT_EQ(get(ep, "/api/events?since=tomorrowish").result_int(), 400);
}

TEST_F(AdminApi, BadParametersAreRefusedWithTheirName) {
  start();
  auto res = get(ep, "/api/requests?decision=maybe");
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_NE(res.body().find("decision"), std::string::npos) << res.body();
  res = get(ep, "/api/requests?since=yesterday");
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_NE(res.body().find("since"), std::string::npos) << res.body();
  res = get(ep, "/api/requests?limit=-3");
  EXPECT_EQ(res.result_int(), 400);
}

// A column with nothing in it is null in every answer, never "": a row with no client
// address, method, path, rule, reason, status or error, and a denial without a reason.
TEST_F(AdminApi, NullColumnsAreNullInEveryAnswer) {
  auto bare = row("bare", "bare.evil.test", "deny");
  bare.client_addr.clear();
  bare.method.clear();
  bare.path.clear();
  bare.resolved_addr.clear();
  bare.rule.clear();
  bare.status.reset();
  writer->insert_complete(bare);
  writer->flush();
  start();
  auto res = get(ep, "/api/requests?agent=bare");
  ASSERT_EQ(res.result_int(), 200) << res.body();
  auto rows = json::parse(res.body());
  ASSERT_EQ(rows.size(), 1u);
  for (const char* column : {"client_addr", "method", "path", "resolved_addr", "rule", "reason", "status", "error"})
    EXPECT_TRUE(rows[0][column].is_null()) << column << ": " << rows[0][column].dump();
  EXPECT_EQ(rows[0]["host"], "bare.evil.test");
  auto summary = json::parse(get(ep, "/api/summary?agent=bare").body());
  ASSERT_EQ(summary["top_denied"].size(), 1u);
  ASSERT_EQ(summary["top_denied"][0]["reasons"].size(), 1u);
  EXPECT_TRUE(summary["top_denied"][0]["reasons"][0]["reason"].is_null()) << summary.dump();
  EXPECT_TRUE(summary["top_denied"][0]["reasons"][0]["rule"].is_null()) << summary.dump();
  // The same rows as `netbox audit --format json` prints them: one mapping, one convention.
  audit::Filter all;
  all.limit = 0;
  EXPECT_EQ(json::parse(get(ep, "/api/requests?limit=0").body()),
            json::parse(audit::format_requests(audit::query_requests(db, all), "json")));
}

// limit: 100 by default, 1000 at most; 0 asks for every row, as `netbox audit --limit 0`
// does, and gets the most this API answers.
TEST_F(AdminApi, LimitIsBoundedAndZeroMeansAsManyAsAllowed) {
  for (int i = 0; i < 1100; ++i) writer->insert(row("bulk", "api.test", "allow"));
  writer->flush();
  start();
  auto count = [&](const std::string& query) {
    auto res = get(ep, "/api/requests?agent=bulk" + query);
    EXPECT_EQ(res.result_int(), 200) << query << ": " << res.body();
    return json::parse(res.body()).size();
  };
  EXPECT_EQ(count(""), 100u);
  EXPECT_EQ(count("&limit="), 100u);
  EXPECT_EQ(count("&limit=1"), 1u);
  EXPECT_EQ(count("&limit=1000"), 1000u);
  EXPECT_EQ(count("&limit=0"), 1000u);
  EXPECT_EQ(count("&limit=1001"), 1000u);
  EXPECT_EQ(count("&limit=99999999999999999999999"), 1000u);
  for (const char* bad : {"-3", "1e3", "ten", "%2010", "0x10"}) {
    auto res = get(ep, std::string("/api/requests?limit=") + bad);
    EXPECT_EQ(res.result_int(), 400) << bad << ": " << res.body();
    EXPECT_NE(res.body().find("limit"), std::string::npos) << res.body();
  }
}

// Parameters written to break out of the SQL are values like any other: they match
// nothing, and a decision that is not one is refused by name.
TEST_F(AdminApi, HostileParametersMatchNothing) {
  start();
  for (const std::string value : {"x%27%20OR%20%271%27%3D%271", "%27%20OR%201%3D1%20--", "coder%27%20--",
                                  "%22)%20OR%201%3D1%3B%20DROP%20TABLE%20requests%3B%20--", "coder%00%27%20OR%201"}) {
    for (const std::string param : {"agent=", "host="}) {
      auto res = get(ep, "/api/requests?" + param + value);
      ASSERT_EQ(res.result_int(), 200) << param << value << ": " << res.body();
      EXPECT_TRUE(json::parse(res.body()).empty()) << param << value << ": " << res.body();
      auto summary = json::parse(get(ep, "/api/summary?" + param + value).body());
      EXPECT_EQ(summary["totals"]["allow"], 0) << param << value;
      EXPECT_EQ(summary["totals"]["deny"], 0) << param << value;
      EXPECT_TRUE(summary["top_denied"].empty()) << param << value;
      EXPECT_TRUE(json::parse(get(ep, "/api/agents?" + param + value).body()).empty()) << param << value;
    }
    auto res = get(ep, "/api/requests?decision=" + value);
    EXPECT_EQ(res.result_int(), 400) << value << ": " << res.body();
    EXPECT_NE(res.body().find("decision"), std::string::npos) << res.body();
  }
  EXPECT_EQ(json::parse(get(ep, "/api/requests").body()).size(), 5u) << "the store is untouched";
}

TEST_F(AdminApi, AnEmptyStoreAnswersZerosAndEmptyLists) {
  auto empty_db = dir.path() / "empty.db";
  {
    audit::WriterOptions wo;
    wo.db_path = empty_db;
    audit::Writer empty(wo);
  }
  db = empty_db;
  start();
  auto summary = json::parse(get(ep, "/api/summary").body());
  EXPECT_EQ(summary["totals"], json::parse(R"({"allow":0,"deny":0,"report":0,"bytes_up":0,"bytes_down":0})"));
  EXPECT_TRUE(summary["top_denied"].empty());
  EXPECT_EQ(get(ep, "/api/agents").body(), "[]");
  EXPECT_TRUE(json::parse(get(ep, "/api/requests").body()).empty());
}

TEST_F(AdminApi, HealthReadinessMetricsAndThePage) {
  start();
  EXPECT_EQ(get(ep, "/healthz").result_int(), 200);
  EXPECT_EQ(get(ep, "/readyz").result_int(), 200);
  ready = false;
  EXPECT_EQ(get(ep, "/readyz").result_int(), 503);
  auto m = get(ep, "/metrics");
  EXPECT_EQ(m.result_int(), 200);
  EXPECT_EQ(m.body(), "netbox_up 1\n");
  EXPECT_NE(std::string(m[http::field::content_type]).find("text/plain"), std::string::npos);
  auto page = get(ep, "/");
  EXPECT_EQ(page.result_int(), 200);
  EXPECT_NE(page.body().find("<title>netbox"), std::string::npos);
  EXPECT_EQ(get(ep, "/uPlot.iife.min.js").result_int(), 200);
  EXPECT_EQ(get(ep, "/app.js").result_int(), 200);
  EXPECT_EQ(get(ep, "/nope").result_int(), 404);
}

TEST_F(AdminApi, TokenGuardsEverythingButProbes) {
  start("s3cret");
  EXPECT_EQ(get(ep, "/healthz").result_int(), 200);
  EXPECT_EQ(get(ep, "/api/summary").result_int(), 401);
  EXPECT_EQ(get(ep, "/metrics", "Bearer wrong").result_int(), 401);
  EXPECT_EQ(get(ep, "/metrics", "Bearer s3cret").result_int(), 200);
  auto login = get(ep, "/?token=s3cret");
  EXPECT_EQ(login.result_int(), 303);
  EXPECT_NE(std::string(login[http::field::set_cookie]).find("HttpOnly"), std::string::npos);
}

// DNS rebinding: a web page the operator visits points its own name at 127.0.0.1 and
// reads the audit through the browser. An endpoint without a token answers only a Host
// that is an address or localhost; with a token the name is harmless (the page has none).
TEST_F(AdminApi, AnEndpointWithoutATokenAnswersNoNamedHost) {
  start();
  const std::string port = std::to_string(ep.port());
  const auto rebound = get(ep, "/api/requests?limit=1", {}, "rebind.attacker.example:" + port);
  EXPECT_EQ(rebound.result_int(), 421);
  EXPECT_EQ(rebound.body().find("api.test"), std::string::npos) << rebound.body();
  EXPECT_EQ(get(ep, "/metrics", {}, "attacker.example").result_int(), 421);
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + port, "127.0.0.1", "localhost:" + port, "[::1]:" + port})
    EXPECT_EQ(get(ep, "/api/requests?limit=1", {}, host).result_int(), 200) << host;
  server.reset();
  start("s3cret");
  EXPECT_EQ(get(ep, "/metrics", "Bearer s3cret", "netbox-admin.monitoring.svc:9090").result_int(), 200);
}

// The page's cookie goes with any page's request to this address (cookies do not tell
// ports apart): an answer by cookie must be the page's own, as JSON; a script with the
// bearer header answers as before.
TEST_F(AdminApi, AnAnswerByCookieMustComeFromThePageItself) {
  start("s3cret");
  auto answer = [&](std::vector<std::pair<std::string, std::string>> fields) {
    http::request<http::string_body> req{http::verb::post, "/api/approve", 11};
    for (auto& [k, v] : fields) req.set(k, v);
    req.body() = R"({"id":1,"scope":"launch"})";
    return send(ep, std::move(req)).result_int();
  };
  const std::pair<std::string, std::string> cookie{"Cookie", "netbox_admin=s3cret"};
  const std::string own = "http://127.0.0.1:" + std::to_string(ep.port());
  // A cross-site form or no-cors fetch: text/plain, another origin, or a cross-site fetch.
  EXPECT_EQ(answer({cookie, {"Content-Type", "text/plain"}}), 403);
  EXPECT_EQ(answer({cookie, {"Content-Type", "application/json"}, {"Origin", "http://127.0.0.1:8000"}}), 403);
  EXPECT_EQ(answer({cookie, {"Content-Type", "application/json"}, {"Sec-Fetch-Site", "same-site"}}), 403);
  EXPECT_TRUE(answered.empty()) << answered.front();
  // The page's own fetch, and a script with the token.
  EXPECT_EQ(answer({cookie, {"Host", own.substr(7)}, {"Content-Type", "application/json"}, {"Origin", own},
                    {"Sec-Fetch-Site", "same-origin"}}),
            200);
  EXPECT_EQ(answer({{"Authorization", "Bearer s3cret"}, {"Content-Type", "application/x-www-form-urlencoded"}}), 200);
  EXPECT_EQ(answered.size(), 2U);
}

// Every connection held open by someone (no token needed to connect) must not shut the
// probes and the operator out: a new connection closes the one waiting longest.
TEST_F(AdminApi, HeldConnectionsDoNotShutOutTheProbes) {
  start("s3cret");
  boost::asio::io_context ioc;
  std::vector<tcp::socket> held;
  for (int i = 0; i < 70; ++i) {
    held.emplace_back(ioc);
    held.back().connect(ep);
    boost::asio::write(held.back(), boost::asio::buffer(std::string("GET /heal")));  // a head never finished
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get(ep, "/healthz").result_int(), 200) << i;
  EXPECT_EQ(get(ep, "/metrics", "Bearer s3cret").result_int(), 200);
}
