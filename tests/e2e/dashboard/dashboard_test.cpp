// The dashboard as a security engineer sees it: real proxy, real traffic, real Chromium.
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

using namespace netbox::test;

namespace {

std::string joined(const nlohmann::json& rows) {
  std::string s;
  for (auto& r : rows) s += r.get<std::string>() + "\n";
  return s;
}

}  // namespace

TEST(DashboardPage, ShowsLiveTrafficInChartAndTablesWithoutOutsideRequests) {
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "www");
  dir.write("www/index.html", "hello from upstream\n");
  const auto up_port = free_port();
  BackgroundProcess upstream({"python3", "-m", "http.server", std::to_string(up_port), "--bind", "127.0.0.1",
                              "--directory", (dir.path() / "www").string()},
                             dir.path() / "upstream.log");
  ASSERT_TRUE(wait_for_port(up_port)) << upstream.log();

  const auto policy = dir.write("policy.json", R"({
    "version": 1,
    "allow": ["app.netbox.test"],
    "ports": [)" + std::to_string(up_port) + R"(],
    "internal": {"allow": ["127.0.0.1/32"]},
    "resolve": {"app.netbox.test": ["127.0.0.1"]}
  })");
  const auto proxy_port = free_port();
  const auto admin_port = free_port();
  const auto db = dir.path() / "audit.db";
  BackgroundProcess proxy({netbox_binary().string(), "proxy", "--policy", policy.string(), "--listen",
                           "127.0.0.1:" + std::to_string(proxy_port), "--audit-db", db.string(), "--admin",
                           "127.0.0.1:" + std::to_string(admin_port), "--admin-insecure"},
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(proxy_port)) << proxy.log();
  ASSERT_TRUE(wait_for_port(admin_port)) << proxy.log();

  const std::string via = "http://127.0.0.1:" + std::to_string(proxy_port);
  const std::string allowed = "http://app.netbox.test:" + std::to_string(up_port) + "/";
  for (int i = 0; i < 3; ++i) {
    auto r = run({"curl", "-sS", "-x", via, allowed});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.out, "hello from upstream\n");
  }
  for (const char* denied : {"http://exfil.netbox.test/upload", "http://169.254.169.254/latest/meta-data/"}) {
    auto r = run({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", via, denied});
    ASSERT_EQ(r.out, "403") << denied << r.err;
  }

  const auto shot = std::filesystem::path(NETBOX_BUILD_DIR) / "dashboard-screenshot.png";
  auto r = run({"env", std::string("NODE_PATH=") + NETBOX_WEB_NODE_MODULES, "node",
                (source_dir() / "tests/e2e/dashboard/check_dashboard.cjs").string(),
                "http://127.0.0.1:" + std::to_string(admin_port) + "/", shot.string()},
               std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto page = nlohmann::json::parse(r.out);
  ASSERT_FALSE(page.contains("error")) << page.dump(2) << "\nproxy log:\n" << proxy.log();

  EXPECT_TRUE(page["outside"].empty()) << "the page reached outside the admin endpoint: " << page["outside"].dump();
  EXPECT_TRUE(page["console_errors"].empty()) << page["console_errors"].dump();
  EXPECT_TRUE(page["page_errors"].empty()) << page["page_errors"].dump();
  EXPECT_EQ(page["tiles"]["allow"], "3");
  EXPECT_EQ(page["tiles"]["deny"], "2");
  EXPECT_GE(page["chart_canvas"].get<int>(), 1);
  // Drawn from the store: the page opened after the traffic, yet the chart holds it.
  EXPECT_EQ(page["chart_sums"]["allow"], 3) << page["chart_sums"].dump();
  EXPECT_EQ(page["chart_sums"]["deny"], 2) << page["chart_sums"].dump();
  EXPECT_GT(page["deny_pixels"].get<int>(), 20) << "no deny line on the chart's canvas";
  EXPECT_NE(page["chart_title"].get<std::string>().find("per 30 s"), std::string::npos) << page["chart_title"];
  EXPECT_FALSE(page["agent_page_at_first"].get<bool>()) << "the page of all agents names one";
  EXPECT_NE(joined(page["events"]).find("policy_load"), std::string::npos) << "the proxy's start: " << page["events"];
  EXPECT_FALSE(page["launches_at_first"].get<bool>());
  // anonymous is a client of the proxy, not a launch: its page says so rather than show none.
  EXPECT_NE(joined(page["agent_page"]["launches"]).find("no launch of this agent recorded"), std::string::npos)
      << page["agent_page"].dump();
  const auto& agent_page = page["agent_page"];
  EXPECT_EQ(agent_page["hash"], "#agent=anonymous") << agent_page.dump();
  EXPECT_TRUE(agent_page["visible"].get<bool>());
  EXPECT_EQ(agent_page["name"], "anonymous");
  EXPECT_EQ(agent_page["filter"], "anonymous");
  EXPECT_NE(joined(agent_page["requests"]).find("app.netbox.test"), std::string::npos) << agent_page.dump();
  EXPECT_EQ(page["other_agent_page"]["name"], "nobody-here");
  EXPECT_EQ(joined(page["other_agent_page"]["requests"]).find("app.netbox.test"), std::string::npos)
      << "another agent's page lists this agent's requests: " << page["other_agent_page"].dump();
  EXPECT_FALSE(page["back"]["visible"].get<bool>());
  EXPECT_EQ(page["back"]["filter"], "");
  EXPECT_NE(page["chart_series"].dump().find("deny"), std::string::npos) << page["chart_series"].dump();
  const auto denied_hosts = joined(page["denied_hosts"]);
  EXPECT_NE(denied_hosts.find("exfil.netbox.test"), std::string::npos) << denied_hosts;
  EXPECT_NE(denied_hosts.find("169.254.169.254"), std::string::npos) << denied_hosts;
  // Each denied host with the reasons it was denied for (the API's "reasons" list).
  EXPECT_NE(denied_hosts.find("exfil.netbox.test is not in allow"), std::string::npos) << denied_hosts;
  EXPECT_EQ(denied_hosts.find("undefined"), std::string::npos) << denied_hosts;
  EXPECT_EQ(denied_hosts.find("null"), std::string::npos) << denied_hosts;
  EXPECT_NE(joined(page["agents"]).find("anonymous"), std::string::npos) << page["agents"].dump();
  EXPECT_NE(joined(page["denials"]).find("not in allow"), std::string::npos) << page["denials"].dump();
  EXPECT_NE(joined(page["requests_table"]).find("app.netbox.test"), std::string::npos);
  const auto filtered = joined(page["filtered_requests"]);
  EXPECT_EQ(filtered.find("app.netbox.test"), std::string::npos) << "decision filter ignored:\n" << filtered;
  EXPECT_NE(filtered.find("exfil.netbox.test"), std::string::npos) << filtered;
  EXPECT_TRUE(std::filesystem::exists(shot));
}
