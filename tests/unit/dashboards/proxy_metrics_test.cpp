// /metrics as Prometheus and Grafana read it.
#include "netbox/dashboards/proxy_metrics.hpp"
#include "support/process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
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
  a.spool_rows = 11;
  a.spool_bytes = 4400;
  a.spool_shipped = 9;
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
  EXPECT_NE(text.find("netbox_audit_spool_rows 11\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_audit_spool_bytes 4400\n"), std::string::npos);
  EXPECT_NE(text.find("netbox_audit_spool_shipped_total 9\n"), std::string::npos);
}

TEST(ProxyMetrics, EveryLineIsValidExpositionSyntax) {
  const auto text = dashboards::render_metrics(busy(), {});
  std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|\+Inf|NaN)$)");
  std::regex meta(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_TRUE(std::regex_match(line, sample) || std::regex_match(line, meta)) << line;
  // Counters end in _total, durations are in seconds, bytes in bytes.
  for (const auto& f : families(text)) EXPECT_TRUE(f.rfind("netbox_", 0) == 0 || f.rfind("process_", 0) == 0) << f;
}

// One sample's value, by its full name with labels as written; NaN when absent.
double sample_value(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + name.size() + 2));
}

TEST(ProxyMetrics, BuildPolicyAndProcessFamiliesDescribeTheRunningProxy) {
  proxy::CountersSnapshot c = busy();
  c.policy_digest = std::string(64, 'a');
  c.policy_loaded_at = 1795000000.5;
  const auto text = dashboards::render_metrics(c, {});
  EXPECT_NE(text.find("netbox_build_info{version=\"0."), std::string::npos) << text;
  EXPECT_NE(text.find(",commit=\""), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_policy_info{digest=\"" + std::string(64, 'a') + "\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(sample_value(text, "netbox_policy_loaded_timestamp_seconds"), 1795000000.5) << text;
  // The process_* values are this test process's own, read from /proc.
  EXPECT_GT(sample_value(text, "process_resident_memory_bytes"), 1e5) << text;
  EXPECT_GT(sample_value(text, "process_virtual_memory_bytes"), sample_value(text, "process_resident_memory_bytes"));
  EXPECT_GE(sample_value(text, "process_open_fds"), 3) << text;  // stdin, stdout, stderr at least
  EXPECT_GE(sample_value(text, "process_max_fds"), sample_value(text, "process_open_fds"));
  EXPECT_GE(sample_value(text, "process_cpu_seconds_total"), 0) << text;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double started = sample_value(text, "process_start_time_seconds");
  EXPECT_LE(started, now + 2) << text;
  EXPECT_GT(started, now - 3600) << "this test process did not start in the last hour? " << text;
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
}

// An alert on increase() never fires on a series' first sample, so the exfiltration series
// must exist, at 0, before the first attempt; later attempts move it.
TEST(ProxyMetrics, AgentEventsArePublishedFromZeroAndCounted) {
  auto text = dashboards::render_metrics({}, {});
  EXPECT_NE(text.find("netbox_agent_events_total{event=\"exfiltration_attempt\"} 0\n"), std::string::npos) << text;
  proxy::CountersSnapshot c;
  c.agent_events = {{"exfiltration_attempt", 3}};
  text = dashboards::render_metrics(c, {});
  EXPECT_NE(text.find("netbox_agent_events_total{event=\"exfiltration_attempt\"} 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("netbox_agent_events_total{event=\"exfiltration_attempt\"} 0\n"), std::string::npos) << text;
}

// The TLS inspection handshakes by side and result, and the attached agents, from 0.
TEST(ProxyMetrics, TlsHandshakesAndAttachedAgentsArePublishedFromZero) {
  auto text = dashboards::render_metrics({}, {});
  for (const char* series : {"netbox_tls_handshakes_total{side=\"agent\",result=\"failed\"} 0\n",
                             "netbox_tls_handshakes_total{side=\"upstream\",result=\"certificate_refused\"} 0\n",
                             "netbox_attached_agents 0\n"})
    EXPECT_NE(text.find(series), std::string::npos) << series << text;
  proxy::CountersSnapshot c;
  c.attached_agents = 2;
  c.tls_agent[0] = 5;
  c.tls_upstream[2] = 1;
  text = dashboards::render_metrics(c, {});
  EXPECT_NE(text.find("netbox_attached_agents 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_tls_handshakes_total{side=\"agent\",result=\"ok\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("netbox_tls_handshakes_total{side=\"upstream\",result=\"timeout\"} 1\n"), std::string::npos)
      << text;
}

// The shipped alert rules read only series a proxy exports (a renamed metric would leave an
// alert that can never fire, and promtool cannot know).
TEST(AlertRules, EveryExpressionNamesAnExportedMetric) {
  std::ifstream f(test::source_dir() / "dashboards/prometheus/netbox-alerts.yml");
  ASSERT_TRUE(f) << "dashboards/prometheus/netbox-alerts.yml is missing";
  const auto exported = families(dashboards::render_metrics({}, {}));
  std::regex expr_line("^\\s*expr:\\s*(.*)$");
  std::regex metric("netbox_[a-z_]+");
  int rules = 0;
  std::string line;
  while (std::getline(f, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, expr_line)) continue;
    ++rules;
    const std::string expr = m[1];
    int named = 0;
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it, ++named)
      EXPECT_TRUE(exported.count(it->str())) << expr << ": " << it->str() << " is not exported";
    EXPECT_GT(named, 0) << expr;
  }
  EXPECT_GE(rules, 4);
}

// Grafana's file provisioning does not fill in an import's __inputs: the data source must be
// a template variable, and every query must follow the job and instance chosen, so one
// Grafana can watch several proxies.
TEST(GrafanaDashboard, ProvisionsFromAFileWithDataSourceJobAndInstanceVariables) {
  std::ifstream f(test::source_dir() / "dashboards/grafana/netbox.json");
  auto dash = nlohmann::json::parse(f);
  EXPECT_FALSE(dash.contains("__inputs")) << "provisioning leaves ${DS_...} of __inputs unresolved";
  EXPECT_FALSE(dash.at("uid").get<std::string>().empty());
  std::map<std::string, nlohmann::json> vars;
  for (const auto& v : dash.at("templating").at("list")) vars[v.at("name")] = v;
  ASSERT_TRUE(vars.count("DS_PROMETHEUS"));
  EXPECT_EQ(vars["DS_PROMETHEUS"]["type"], "datasource");
  EXPECT_EQ(vars["DS_PROMETHEUS"]["query"], "prometheus");
  for (const char* name : {"job", "instance", "agent"}) {
    ASSERT_TRUE(vars.count(name)) << name;
    EXPECT_EQ(vars[name]["type"], "query") << name;
    EXPECT_EQ(vars[name]["datasource"]["uid"], "${DS_PROMETHEUS}") << name;
  }
  EXPECT_NE(vars["job"]["query"].get<std::string>().find("netbox_build_info"), std::string::npos);
  EXPECT_NE(vars["agent"]["query"].get<std::string>().find("netbox_requests_total"), std::string::npos);
  const std::regex metric(R"(netbox_[a-z_]+(\{[^}]*\})?)");
  for (const auto& panel : dash.at("panels")) {
    EXPECT_EQ(panel.at("datasource").at("uid"), "${DS_PROMETHEUS}") << panel.at("title");
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it)
        EXPECT_NE(it->str().find("job=~\"$job\",instance=~\"$instance\""), std::string::npos)
            << panel.at("title") << ": " << it->str();
    }
  }
  std::ifstream provisioning(test::source_dir() / "dashboards/grafana/provisioning.yaml");
  std::string text((std::istreambuf_iterator<char>(provisioning)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("type: file"), std::string::npos);
  EXPECT_NE(text.find("path: /usr/share/netbox/grafana"), std::string::npos);
}
