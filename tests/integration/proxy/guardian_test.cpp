// Guardian rules acting on an agent's events (issue 25), through the real proxy: denials
// counted over a window fire a rule, which is an `events` row, a metric, a POST to the
// policy's webhook (a loopback HTTP server here) and, for the agent's launcher, an action.
// Without a launcher to act (this in-process proxy), a kill is recorded as not done:
// never as done. Each action reaches a SIEM export as an OCSF Detection Finding that
// validates against the schema. A webhook that never answers blocks nothing: its queue is bounded and
// what does not fit is dropped and counted.
#include "export_files.hpp"
#include "proxy_fixture.hpp"
#include "support/secret_samples.hpp"

#include <signal.h>

#include "support/process.hpp"
#include "support/raw_upstream.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/export/exporter.hpp"

#include <nlohmann/json.hpp>

#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

namespace netbox::test {
namespace {

using nlohmann::json;

// A loopback webhook receiver: every POST's body, answered 200 (or never, when stalled).
class HookServer {
 public:
  explicit HookServer(bool stall = false, std::chrono::milliseconds delay = {})
      : stall_(stall), delay_(delay), server_([this](RawUpstream& s, int fd, std::size_t) { serve(s, fd); }) {}
  unsigned short port() const { return server_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/hook"; }
  std::vector<json> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  // Waits (bounded) until `n` POSTs came.
  std::vector<json> wait_for(std::size_t n) {
    for (int i = 0; i < 1000 && bodies().size() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return bodies();
  }

 private:
  void serve(RawUpstream& s, int fd) {
    std::string pending;
    const auto head = s.read_head(fd, pending);
    if (head.empty()) return;
    if (stall_) {
      char c;
      while (!s.stopping() && ::recv(fd, &c, 1, 0) > 0) {
      }
      return;
    }
    std::size_t length = 0;
    if (auto at = head.find("Content-Length: "); at != std::string::npos) length = std::stoul(head.substr(at + 16));
    char buf[4096];
    while (pending.size() < length) {
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      pending.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      bodies_.push_back(json::parse(pending.substr(0, length)));
    }
    std::this_thread::sleep_for(delay_);
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  }

  bool stall_;
  std::chrono::milliseconds delay_;  // a slow receiver: each answer this late
  std::mutex mu_;
  std::vector<json> bodies_;
  RawUpstream server_;
};

class GuardianTest : public ProxyTest {
 protected:
  void start(const std::string& rules, const std::string& webhook) {
    start_proxy(base_policy(R"("deny": ["denied.test"], "guardian": {"rules": )" + rules + R"(, "webhook": ")" +
                            webhook + R"("})"));
  }
  int denied() { return proxy_get(port, "http://denied.test/").status; }
  std::uint64_t actions(const std::string& action, const std::string& trigger) {
    for (const auto& a : server->counters().guardian_actions)
      if (a.action == action && a.trigger == trigger) return a.count;
    return 0;
  }
  std::vector<EventRow> guardian_rows(const std::string& kind) {
    std::vector<EventRow> out;
    for (auto& e : events())
      if (e.kind == kind) out.push_back(e);
    return out;
  }
};

// An https:// webhook (issue 25 item 4): a loopback TLS receiver with a certificate from a
// test CA the policy names (`webhook_ca`) gets the POST; one whose certificate names
// another host gets nothing (the name is verified), the attempts counted as failed, and
// neither the system's roots nor a plain connection is tried instead.
TEST_F(GuardianTest, AnHttpsWebhookIsPostedOnlyToTheReceiverItsCaVouchesForByName) {
  TlsUpstreamServer good("127.0.0.1"), wrong_name("receiver.test");
  const std::string hook = "https://127.0.0.1:" + std::to_string(good.port()) + "/hook";
  const std::string bad_hook = "https://127.0.0.1:" + std::to_string(wrong_name.port()) + "/hook";
  start_proxy(base_policy(R"("deny": ["denied.test"],
    "guardian": {"rules": [{"on": ["denied >= 1 in 60s"], "action": "report"}], "webhook": ")" + hook +
                          R"(", "webhook_ca": ")" + good.ca_pem().string() + R"("},
    "agents": {"other": {"guardian": {"rules": [{"on": ["denied >= 1 in 60s"], "action": "report"}],
                                      "webhook": ")" + bad_hook + R"(", "webhook_ca": ")" + wrong_name.ca_pem().string() +
                          R"("}}})"));
  EXPECT_EQ(denied(), 403);
  for (int i = 0; i < 1000 && good.requests() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(good.requests(), 1u);
  const auto echo = json::parse(good.last_echo());
  EXPECT_EQ(echo["method"], "POST");
  EXPECT_EQ(echo["target"], "/hook");
  const auto body = json::parse(echo["body"].get<std::string>());
  EXPECT_EQ(body["agent"], "anonymous");
  EXPECT_EQ(body["action"], "report");

  server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "other-agent", "other");
  EXPECT_EQ(denied(), 403);
  for (int i = 0; i < 1000 && server->counters().webhook_failed == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(server->counters().webhook_failed, 0u);
  EXPECT_EQ(wrong_name.requests(), 0u) << "a certificate for another name is never posted to";
  EXPECT_EQ(server->counters().webhook_sent, 1u);
}

TEST_F(GuardianTest, AWebhookCaThatIsNotACertificateOrWithoutAnHttpsWebhookIsAPolicyError) {
  std::ofstream(dir.path() / "not-a-ca.pem") << "not a certificate\n";
  const auto load = [&](const std::string& guardian) {
    std::ofstream(dir.path() / "p.json") << R"({"allow": ["x.test"], "guardian": )" + guardian + "}";
    return run_netbox({"policy", "check", (dir.path() / "p.json").string()});
  };
  auto r = load(R"({"webhook": "https://127.0.0.1:9/hook", "webhook_ca": ")" + (dir.path() / "not-a-ca.pem").string() + R"("})");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("webhook_ca"), std::string::npos) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("not a readable PEM certificate file"), std::string::npos) << r.out << r.err;
  r = load(R"({"webhook": "http://127.0.0.1:9/hook", "webhook_ca": "/etc/ssl/certs/ca-certificates.crt"})");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("needs an https:// webhook"), std::string::npos) << r.out << r.err;
  r = load(R"({"webhook": "ftp://127.0.0.1:9/hook"})");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

TEST_F(GuardianTest, DenialsOverTheThresholdReportWithARowAMetricAndOneWebhookPost) {
  HookServer hook;
  start(R"([{"on": ["denied >= 3 in 60s"], "action": "report"}])", hook.url());
  EXPECT_EQ(denied(), 403);
  EXPECT_EQ(denied(), 403);
  EXPECT_EQ(actions("report", "denied"), 0u);  // two denials: under the threshold
  EXPECT_EQ(denied(), 403);
  EXPECT_EQ(actions("report", "denied"), 1u);

  const auto posts = hook.wait_for(1);
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0]["agent"], "anonymous");
  EXPECT_EQ(posts[0]["action"], "report");
  EXPECT_EQ(posts[0]["trigger"], "denied >= 3 in 60s");
  EXPECT_EQ(posts[0]["rule"], "guardian.rules[0]");
  EXPECT_EQ(posts[0]["failed"], false);

  const auto rows = guardian_rows("guardian_action");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].message.find("guardian.rules[0]"), std::string::npos) << rows[0].message;
  EXPECT_EQ(json::parse(rows[0].detail)["trigger"], "denied >= 3 in 60s");

  // The agent's state, as /api/agents/{name} shows it.
  const auto report = json::parse(server->guardian_report("anonymous").value_or("{}"));
  EXPECT_EQ(report["violations"]["denied"], 3);
  ASSERT_EQ(report["actions"].size(), 1u);
  EXPECT_EQ(report["actions"][0]["action"], "report");
  EXPECT_FALSE(server->guardian_report("nobody").has_value());
}

// A threshold that keeps holding fires once: the 4th..12th denials inside the same minute
// act (and post) no more; a rule that acted again on every one would kill an agent being
// killed, and flood the webhook, at the agent's own pace.
TEST_F(GuardianTest, AThresholdFiresOncePerCrossingNotOnEveryDenialWhileItHolds) {
  HookServer hook;
  start(R"([{"on": ["denied >= 3 in 60s"], "action": "report"}])", hook.url());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(denied(), 403) << i;
  EXPECT_EQ(actions("report", "denied"), 1u);
  EXPECT_EQ(guardian_rows("guardian_action").size(), 1u);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // time for a second post, were there one
  EXPECT_EQ(hook.bodies().size(), 1u);
  const auto report = json::parse(server->guardian_report("anonymous").value_or("{}"));
  EXPECT_EQ(report["violations"]["denied"], 12);  // every denial is still counted
}

TEST_F(GuardianTest, AKillWithNoLauncherToActIsRecordedAsNotDone) {
  HookServer hook;
  start(R"([{"on": ["denied >= 2 in 60s"], "action": "kill"}])", hook.url());
  EXPECT_EQ(denied(), 403);
  EXPECT_EQ(denied(), 403);
  EXPECT_EQ(actions("kill", "denied"), 1u);
  EXPECT_EQ(server->counters().guardian_actions_failed, 1u);
  const auto rows = guardian_rows("guardian_action_failed");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].message.find("could not kill"), std::string::npos) << rows[0].message;
  EXPECT_TRUE(guardian_rows("guardian_action").empty());
  const auto posts = hook.wait_for(1);
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0]["failed"], true);
}

// An agent whose requests keep tripping a freeze rule while its launcher is freezing it
// (the answer takes a while; a flood of pipelined requests is still being read): one
// freeze is asked of the launcher and recorded, not one per request, each of which was a
// round trip queued ahead of every other agent's actions and the operators' (found by a
// hostile review).
TEST_F(GuardianTest, ARuleTrippedAgainWhileItsActionIsUnderWayAsksTheLauncherOnce) {
  HookServer hook;
  start(R"([{"on": ["denied"], "action": "freeze"}])", hook.url());
  std::atomic<int> asked{0};
  proxy::AgentAttachment a;
  a.addr = boost::asio::ip::make_address("127.0.0.1");
  a.name = "tripping";
  a.listen = boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0);
  a.enforcer = [&](std::string_view action, const std::string&) {
    ++asked;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return std::string(action) + " done";
  };
  const auto attached = server->attach_agent(a);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(proxy_get(attached.listener->port(), "http://denied.test/").status, 403) << i;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // time for more round trips, were any queued
  EXPECT_EQ(asked.load(), 1);
  EXPECT_EQ(guardian_rows("guardian_action").size(), 1u);
  server->detach_agent(attached, {});
}

// A kill on its way (the launcher's round trip, then a grace before SIGKILL that an agent
// ignoring SIGTERM rides out): from the moment the rule fires, the agent's requests are
// refused and a tunnel it already holds is cut at its next piece, not two seconds later
// (a hostile review got 122 requests through that window).
TEST_F(GuardianTest, AnAgentBeingKilledIsRefusedAndCutAtOnce) {
  ::signal(SIGPIPE, SIG_IGN);
  HookServer hook;
  start(R"([{"on": ["denied >= 2 in 60s"], "action": "kill"}])", hook.url());
  std::atomic<bool> killing{false};
  proxy::AgentAttachment a;
  a.addr = boost::asio::ip::make_address("127.0.0.1");
  a.name = "stubborn";
  a.listen = boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0);
  a.enforcer = [&](std::string_view action, const std::string&) {
    killing = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // SIGTERM ignored, then the grace
    return std::string(action) + " done";
  };
  const auto attached = server->attach_agent(a);
  const auto agent_port = attached.listener->port();
  ProxyConnection tunnel(agent_port);
  const std::string authority = "upstream.test:" + std::to_string(upstream.port());
  ASSERT_EQ(tunnel.send("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", true).status, 200);
  const auto before = upstream.requests();
  EXPECT_EQ(proxy_get(agent_port, "http://denied.test/").status, 403);
  EXPECT_EQ(proxy_get(agent_port, "http://denied.test/").status, 403);
  for (int i = 0; i < 200 && !killing; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(killing.load());
  const auto after = proxy_get(agent_port, upstream_url("/after-the-trigger"));
  EXPECT_EQ(after.status, 403);
  EXPECT_NE(after.header("x-netbox-reason").find("the guardian is killing the agent"), std::string::npos)
      << after.header("x-netbox-reason");
  try {
    tunnel.write("GET /through-the-tunnel HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  } catch (const std::exception&) {
  }
  EXPECT_TRUE(tunnel.closed_within(std::chrono::milliseconds(1500))) << "the tunnel was not cut";
  EXPECT_EQ(upstream.requests(), before) << "something reached the upstream after the rule fired";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the enforcer returns
  server->detach_agent(attached, {});
}

// One agent's flood of reports fills the webhook's queue (one POST per denial, a slow
// receiver): its kill must still be told, and first, not dropped behind them.
TEST_F(GuardianTest, AKillIsToldThroughTheWebhookEvenBehindAFloodOfReports) {
  HookServer hook(false, std::chrono::milliseconds(20));
  start(R"([{"on": ["denied"], "action": "report"}, {"on": ["secret_in_request"], "action": "kill"}])", hook.url());
  std::vector<std::thread> flood;
  for (int t = 0; t < 4; ++t)
    flood.emplace_back([&] {
      for (int i = 0; i < 300; ++i) denied();
    });
  for (auto& f : flood) f.join();
  EXPECT_GT(server->counters().webhook_dropped, 0u) << "the flood did not fill the queue";
  const auto token = "ghp_" + run_of(kAlnum, 36, 777);
  EXPECT_EQ(proxy_get(port, upstream_url("/q?t=" + token)).status, 403);
  bool told = false;
  for (int i = 0; i < 500 && !told; ++i) {
    for (const auto& b : hook.bodies())
      if (b.value("action", "") == "kill") told = true;
    if (!told) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(told) << "the kill's notice never reached the webhook";
}

// The export a security team watches (issue 26 item 3): a report and a kill the proxy could
// not carry out are each a Detection Finding (class 2004) naming the agent, the rule, the
// trigger and the action in netbox.*, beside the finding of each refusal, and every record
// validates against the OCSF schema's class files.
TEST_F(GuardianTest, EachGuardianActionIsAnOcsfDetectionFindingInTheExport) {
  HookServer hook;
  const auto jsonl = dir.path() / "export.jsonl";
  std::shared_ptr<siem::Exporter> exporter;
  configure = [&](proxy::ProxyOptions& o) {
    exporter = std::make_shared<siem::Exporter>(
        std::vector<siem::SinkSpec>{siem::parse_sink("ocsf-jsonl:" + jsonl.string())}, siem::ExporterOptions{});
    o.exporter = exporter;
  };
  start(R"([{"on": ["denied >= 2 in 60s"], "action": "report"}, {"on": ["denied >= 3 in 60s"], "action": "kill"}])",
        hook.url());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(denied(), 403) << i;
  EXPECT_EQ(actions("report", "denied"), 1u);
  EXPECT_EQ(actions("kill", "denied"), 1u);
  stop_proxy();
  exporter.reset();  // drains the sink: the file is complete

  const auto records = json_lines(jsonl);
  std::map<std::string, json> actions_found;
  int refusals = 0;
  for (const auto& r : records) {
    if (r["class_uid"] != 2004) continue;
    const auto& n = r["unmapped"]["netbox"];
    const auto event = n.value("event", "");
    if (event.empty()) {
      ++refusals;  // a refused request's finding
      continue;
    }
    EXPECT_EQ(r["category_uid"], 2) << r.dump();  // Findings
    EXPECT_EQ(r["type_uid"], 200401) << r.dump();  // Detection Finding: Create
    EXPECT_EQ(n["agent"], "anonymous") << r.dump();
    EXPECT_EQ(r["finding_info"]["analytic"]["name"], event) << r.dump();
    actions_found[n["detail"]["action"].get<std::string>()] = r;
  }
  EXPECT_EQ(refusals, 3);
  ASSERT_EQ(actions_found.size(), 2u) << "a report and a kill: " << file_bytes(jsonl);
  const auto& report = actions_found["report"]["unmapped"]["netbox"];
  EXPECT_EQ(report["event"], "guardian_action");
  EXPECT_EQ(report["detail"]["rule"], "guardian.rules[0]");
  EXPECT_EQ(report["detail"]["trigger"], "denied >= 2 in 60s");
  EXPECT_EQ(report["detail"]["failed"], false);
  const auto& kill = actions_found["kill"]["unmapped"]["netbox"];
  EXPECT_EQ(kill["event"], "guardian_action_failed");
  EXPECT_EQ(kill["detail"]["rule"], "guardian.rules[1]");
  EXPECT_EQ(kill["detail"]["trigger"], "denied >= 3 in 60s");
  EXPECT_EQ(kill["detail"]["failed"], true);
  EXPECT_NE(actions_found["kill"]["message"].get<std::string>().find("could not kill"), std::string::npos);

  const auto check = check_ocsf(jsonl);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("detection_finding"), std::string::npos) << check.out;
}

TEST_F(GuardianTest, ADeadWebhookBlocksNothingAndItsDropsAreCounted) {
  HookServer hook(/*stall=*/true);
  start(R"([{"on": ["denied"], "action": "report"}])", hook.url());
  // Every denial fires the rule: more events than the webhook's queue holds, while the
  // webhook takes the first POST and never answers.
  const std::size_t n = 1100;
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(denied(), 403) << i;
  EXPECT_EQ(proxy_get(port, upstream_url("/echo")).status, 200);  // still serving
  EXPECT_EQ(actions("report", "denied"), n);
  EXPECT_GT(server->counters().webhook_dropped, 0u);
}

}  // namespace
}  // namespace netbox::test
