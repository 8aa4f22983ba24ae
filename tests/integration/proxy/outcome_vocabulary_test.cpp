// One vocabulary for how a request ended: the X-Netbox-Decision of netbox's answer, the
// audit row's decision and the decision label of netbox_requests_total are one word, for
// every way a request can end (issue 14: a cap was once `cap` on the wire but `deny` in
// the row and the metrics, an upstream failure `error` on the wire but `allow` in the row).
#include "proxy_fixture.hpp"

#include <chrono>
#include <map>
#include <thread>
#include <utility>

namespace netbox::test {
namespace {

using Key = std::pair<std::string, std::string>;  // kind, decision

// netbox_requests_total by (kind, decision).
std::map<Key, std::uint64_t> requests_by_decision(const proxy::CountersSnapshot& c) {
  std::map<Key, std::uint64_t> out;
  for (const auto& r : c.requests) out[{r.kind, r.decision}] += r.count;
  return out;
}

TEST_F(ProxyTest, TheAnswerTheRowAndTheMetricSayTheSameDecision) {
  UpstreamServer gone;  // a port where nothing listens
  const auto dead = gone.port();
  gone.stop();
  start_proxy(base_policy(R"("allow": ["upstream.test", "gone.test"], "deny": ["evil.test"],
      "resolve": {"upstream.test": ["127.0.0.1"], "gone.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]},
      "ports": [)" + std::to_string(upstream.port()) + ", " + std::to_string(dead) + R"(],
      "limits": {"max_connections_per_host": 1})"));
  const auto up = std::to_string(upstream.port());
  struct Case {
    const char* what;
    std::string header;    // X-Netbox-Decision ("" for the upstream's own answer)
    std::string decision;  // the row's and the metric's
    int status;
  };
  std::vector<Case> cases;

  auto r = proxy_get(port, upstream_url("/"));
  EXPECT_EQ(r.status, 200);
  cases.push_back({"allowed", r.header("x-netbox-decision"), last_row().decision, r.status});

  r = proxy_get(port, "http://evil.test:" + up + "/");
  cases.push_back({"denied by policy", r.header("x-netbox-decision"), last_row().decision, r.status});

  r = proxy_get(port, "http://gone.test:" + std::to_string(dead) + "/");
  cases.push_back({"upstream refused the connection", r.header("x-netbox-decision"), last_row().decision, r.status});

  ProxyConnection garbage(port);
  r = garbage.send("GET /origin-form HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
  cases.push_back({"malformed", r.header("x-netbox-decision"), last_row().decision, r.status});

  {
    ProxyConnection tunnel(port);  // holds upstream.test's one slot while it is open
    ASSERT_EQ(tunnel.send("CONNECT upstream.test:" + up + " HTTP/1.1\r\n\r\n", true).status, 200);
    r = proxy_get(port, upstream_url("/"));
    // Established once its first message passed the fronting check: a silent agent's, on
    // this port, once it has been silent for 300 ms (first_flight.hpp).
    for (int i = 0; i < 400 && requests_by_decision(server->counters())[Key("connect", "allow")] == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(requests_by_decision(server->counters())[Key("connect", "allow")], 1U)
        << "an established tunnel is counted while it is open";
  }
  // The refusal's row is the newest; it is read once the tunnel's row is complete too.
  cases.push_back({"over the cap", r.header("x-netbox-decision"), last_row().decision, r.status});

  const std::vector<std::tuple<std::string, std::string, int>> expected{
      {"", "allow", 200}, {"deny", "deny", 403}, {"error", "error", 502}, {"error", "error", 400}, {"cap", "cap", 429}};
  ASSERT_EQ(cases.size(), expected.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].what);
    EXPECT_EQ(cases[i].status, std::get<2>(expected[i]));
    EXPECT_EQ(cases[i].header, std::get<0>(expected[i]));
    EXPECT_EQ(cases[i].decision, std::get<1>(expected[i]));
  }
  const auto counts = requests_by_decision(server->counters());
  EXPECT_EQ(counts.at(Key("http", "allow")), 1U);
  EXPECT_EQ(counts.at(Key("http", "deny")), 1U);
  EXPECT_EQ(counts.at(Key("http", "error")), 2U) << "the upstream failure and the malformed request";
  EXPECT_EQ(counts.at(Key("http", "cap")), 1U);
  EXPECT_EQ(counts.at(Key("connect", "allow")), 1U);
}

}  // namespace
}  // namespace netbox::test
