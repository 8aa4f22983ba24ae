// `netbox proxy` as a process, driven by real curl as docs/proxy.md shows:
// curl -x http://127.0.0.1:PORT URL (forwarding) and curl -p -x ... (CONNECT tunnel).
#include "support/background_process.hpp"
#include "support/curl.hpp"
#include "support/process.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

class ProxyProcessTest : public ::testing::Test {
 protected:
  void start(const std::vector<std::string>& extra = {}) {
    port = free_port();
    policy = dir.write("policy.json", policy_text());
    db = dir.path() / "audit.db";
    std::vector<std::string> argv{netbox_binary().string(), "proxy", "--policy", policy.string(), "--listen",
                                  "127.0.0.1:" + std::to_string(port), "--audit-db", db.string(), "--threads", "2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc = std::make_unique<BackgroundProcess>(argv, dir.path() / "proxy.log");
    ASSERT_TRUE(wait_for_port(port)) << proc->log();
  }
  std::string policy_text(const std::string& more_allow = {}) const {
    return R"({"version": 1, "allow": ["upstream.test")" + more_allow + R"(], "ports": [)" +
           std::to_string(upstream.port()) + R"(], "internal": {"allow": ["127.0.0.1/32"]},
              "resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]}})";
  }
  std::string url(const std::string& host, const std::string& path) const {
    return "http://" + host + ":" + std::to_string(upstream.port()) + path;
  }
  std::string proxy_url() const { return "http://127.0.0.1:" + std::to_string(port); }
  static RunResult curl(const std::vector<std::string>& args) { return curl_with_status(args); }
  std::vector<std::string> column(const std::string& sql) const { return query_column(db, sql); }

  TempDir dir;
  UpstreamServer upstream;
  unsigned short port = 0;
  std::filesystem::path policy, db;
  std::unique_ptr<BackgroundProcess> proc;
};

TEST_F(ProxyProcessTest, CurlThroughTheProxyForwardsAllowedAndExplainsDenied) {
  start();
  auto ok = curl({"-x", proxy_url(), url("upstream.test", "/hello")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(status_of(ok), 200) << ok.out;
  EXPECT_NE(ok.out.find("\"target\":\"/hello\""), std::string::npos) << ok.out;

  auto denied = curl({"-i", "-x", proxy_url(), url("denied.test", "/")});
  EXPECT_EQ(status_of(denied), 403);
  EXPECT_NE(denied.out.find("X-Netbox-Decision: deny"), std::string::npos) << denied.out;
  EXPECT_NE(denied.out.find("X-Netbox-Reason: denied.test is not in allow"), std::string::npos) << denied.out;

  EXPECT_EQ(proc->stop(SIGTERM), 0) << proc->log();
  auto decisions = column("SELECT decision || ' ' || host || ' ' || status FROM requests ORDER BY id");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0], "allow upstream.test 200");
  EXPECT_EQ(decisions[1], "deny denied.test 403");
}

TEST_F(ProxyProcessTest, CurlTunnelsThroughConnectWithP) {
  start();
  auto r = curl({"-p", "-x", proxy_url(), url("upstream.test", "/big?n=1000000")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(r.out.size(), 1000000u + 4u);  // body + "\n200"
  EXPECT_TRUE(r.out.substr(0, 1000000) == pattern_bytes(1000000));
  auto denied = curl({"-p", "-x", proxy_url(), "http://upstream.test:22/"});
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_EQ(proc->stop(SIGTERM), 0) << proc->log();
  auto kinds = column("SELECT kind || ' ' || decision || ' ' || status FROM requests ORDER BY id");
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0], "connect allow 200");
  EXPECT_EQ(kinds[1], "connect deny 403");
}

TEST_F(ProxyProcessTest, SighupReloadsThePolicyAndJsonLogsAreOneObjectPerLine) {
  start({"--log-format", "json"});
  EXPECT_EQ(status_of(curl({"-x", proxy_url(), url("later.test", "/")})), 403);
  {
    std::ofstream f(policy);
    f << policy_text(R"(, "later.test")");
  }
  ::kill(proc->pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 200 && !reloaded; ++i) {
    reloaded = status_of(curl({"-x", proxy_url(), url("later.test", "/")})) == 200;
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(reloaded) << proc->log();
  EXPECT_EQ(proc->stop(SIGINT), 0);
  std::istringstream log(proc->log());
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) {
    if (line.empty()) continue;
    ++lines;
    auto j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    EXPECT_TRUE(j.contains("event")) << line;
  }
  EXPECT_GE(lines, 3);
  auto kinds = column("SELECT kind FROM events ORDER BY id");
  EXPECT_GE(std::count(kinds.begin(), kinds.end(), "policy_load"), 2);
}

TEST_F(ProxyProcessTest, ConfigurationErrorsExitTwoNamingTheProblem) {
  auto pol = dir.write("policy.json", policy_text());
  auto bad = dir.write("bad.json", R"({"version": 1, "allow": ["a.*.example"]})");
  auto r = run_netbox({"proxy", "--policy", bad.string(), "--listen", "127.0.0.1:0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;

  r = run_netbox({"proxy", "--policy", pol.string(), "--listen", "localhost:80"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--listen"), std::string::npos) << r.err;

  UpstreamServer busy;  // something already listens there
  r = run_netbox({"proxy", "--policy", pol.string(), "--listen", "127.0.0.1:" + std::to_string(busy.port()),
                  "--audit-db", (dir.path() / "a.db").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--listen 127.0.0.1:" + std::to_string(busy.port())), std::string::npos) << r.err;

  r = run_netbox({"proxy", "--policy", pol.string(), "--log-format", "xml"});
  EXPECT_EQ(r.exit_code, 2);

  r = run_netbox({"proxy", "--policy", pol.string(), "--dns-server", "dns.example"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dns-server"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace netbox::test

namespace netbox::test {
namespace {

TEST_F(ProxyProcessTest, CurlUploadWithExpectContinueIsForwardedWhole) {
  start();
  const auto body = pattern_bytes(3 * 1024 * 1024);
  auto file = dir.write("upload.bin", body);
  // curl sends "Expect: 100-continue" for bodies this size and waits for the 100.
  auto r = curl({"-x", proxy_url(), "--expect100-timeout", "30", "--data-binary", "@" + file.string(),
                 url("upstream.test", "/body")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(r.out.size(), body.size() + 4);
  EXPECT_TRUE(r.out.substr(0, body.size()) == body);
}

}  // namespace
}  // namespace netbox::test

namespace netbox::test {
namespace {

TEST_F(ProxyProcessTest, SavingThePolicyFileReloadsItWithoutASignal) {
  start();
  EXPECT_EQ(status_of(curl({"-x", proxy_url(), url("later.test", "/")})), 403);
  // Write a new file and rename it over the old one, as editors do.
  auto next = dir.write("policy.json.new", policy_text(R"(, "later.test")"));
  std::filesystem::rename(next, policy);
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    reloaded = status_of(curl({"-x", proxy_url(), url("later.test", "/")})) == 200;
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(reloaded) << proc->log();
  EXPECT_EQ(proc->stop(SIGTERM), 0);
  EXPECT_EQ(column("SELECT kind FROM events WHERE kind = 'policy_reload_failed'").size(), 0u);
}

}  // namespace
}  // namespace netbox::test
