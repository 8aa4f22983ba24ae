// /metrics as Prometheus and Grafana read it.
#include "netbox/dashboards/proxy_metrics.hpp"
#include "support/process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>

using namespace netbox;

namespace {

proxy::CountersSnapshot busy() {
  proxy::CountersSnapshot c;
  c.requests = {{"coder", "http", "allow", 5}, {"coder", "connect", "deny", 2}, {"analyst", "http", "report", 1}};
  c.active_connections = 3;
  c.active_tunnels = 1;
  c.bytes_up = 100;
  c.bytes_down = 4096;
  c.dns_latency = {{1, 10}, {4, 1, 0}, 7.5, 5};
  c.upstream_connect_latency = {{1, 10}, {0, 2, 1}, 30, 3};
  c.caps_hit_host = 4;
  c.policy_reloads_failed = 1;
  return c;
}

std::set<std::string> families(const std::string& text) {
  std::set<std::string> out;
  std::regex type_line("^# TYPE (\\S+) (counter|gauge|histogram)$");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) out.insert(m[1]);
  }
  return out;
}

}  // namespace

TEST(ProxyMetrics, CountersMoveWithTrafficAndUseBaseUnits) {
  audit::WriterStats a;
  a.queue_depth = 7;
  a.rows_written = 42;
  a.rejected = 3;
  const auto text = dashboards::render_metrics(busy(), a);
  EXPECT_NE(text.find("netbox_requests_total{agent=\"coder\",decision=\"allow\",kind=\"http\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_requests_total{agent=\"coder\",decision=\"deny\",kind=\"connect\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_active_connections 3\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_bytes_total{direction=\"down\"} 4096\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_dns_lookup_seconds_bucket{le=\"0.001\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_dns_lookup_seconds_bucket{le=\"+Inf\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_dns_lookup_seconds_sum 0.0075\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_caps_hit_total{limit=\"max_connections_per_host\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_policy_reloads_total{result=\"failed\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_audit_queue_depth 7\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_audit_rows_written_total 42\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_audit_rejected_total 3\n"), std::string::npos);
}

TEST(ProxyMetrics, EveryLineIsValidExpositionSyntax) {
  const auto text = dashboards::render_metrics(busy(), {});
  std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|\+Inf|NaN)$)");
  std::regex meta(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_TRUE(std::regex_match(line, sample) || std::regex_match(line, meta)) << line;
  // Counters end in _total, durations are in seconds, bytes in bytes.
  for (const auto& f : families(text)) EXPECT_EQ(f.rfind("netbox_", 0), 0u) << f;
}

TEST(ProxyMetrics, LiveStatsSumDecisionsAcrossAgentsAndKinds) {
  auto s = dashboards::live_stats(busy());
  EXPECT_EQ(s.allow, 5u);
  EXPECT_EQ(s.deny, 2u);
  EXPECT_EQ(s.report, 1u);
  EXPECT_EQ(s.active_tunnels, 1u);
}

TEST(GrafanaDashboard, ParsesAndEveryQueryNamesAnExportedMetric) {
  std::ifstream f(test::source_dir() / "dashboards/grafana/netbox.json");
  ASSERT_TRUE(f) << "dashboards/grafana/netbox.json is missing";
  auto dash = nlohmann::json::parse(f);
  const auto exported = families(dashboards::render_metrics({}, {}));
  std::regex metric("netbox_[a-z_]+");
  int queries = 0;
  for (const auto& panel : dash.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      ++queries;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_sum", "_count"})
          if (!exported.count(name) && name.size() > std::strlen(suffix) &&
              name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
            name.resize(name.size() - std::strlen(suffix));
        EXPECT_TRUE(exported.count(name)) << panel.at("title") << ": " << it->str() << " is not exported";
      }
    }
  }
  EXPECT_GE(queries, 8);
  const std::string var_query = dash["templating"]["list"][0]["query"];
  EXPECT_NE(var_query.find("netbox_requests_total"), std::string::npos);
}
