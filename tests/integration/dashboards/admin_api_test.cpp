// The admin endpoint over a real audit database and real HTTP on loopback.
#include "netbox/audit/writer.hpp"
#include "netbox/dashboards/admin_server.hpp"
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

http::response<http::string_body> get(const tcp::endpoint& ep, const std::string& target,
                                      const std::string& auth = {}) {
  boost::asio::io_context ioc;
  tcp::socket s(ioc);
  s.connect(ep);
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!auth.empty()) req.set(http::field::authorization, auth);
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res);
  return res;
}

audit::AuditRecord row(std::string agent, std::string host, std::string decision, std::string reason = {}) {
  audit::AuditRecord r;
  r.ts = audit::Clock::now();
  r.agent = std::move(agent);
  r.client_addr = "10.213.0.2:40000";
  r.kind = "http";
  r.method = "GET";
  r.host = std::move(host);
  r.port = 80;
  r.path = "/";
  r.decision = std::move(decision);
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
    server = std::make_unique<dashboards::AdminServer>(o);
    ep = server->local_endpoint();
  }
  test::TempDir dir;
  std::filesystem::path db;
  std::unique_ptr<audit::Writer> writer;
  std::unique_ptr<dashboards::AdminServer> server;
  tcp::endpoint ep;
  bool ready = true;
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
  EXPECT_EQ(j["top_denied"][0]["reason"], "x.evil.test matches deny[0] *.evil.test");
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
