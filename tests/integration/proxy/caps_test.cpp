// Connection caps under concurrent load: exactly `limit` tunnels get through, the rest
// get 429 with Retry-After, and the rows name the limit.
#include "proxy_fixture.hpp"

#include <atomic>
#include <barrier>
#include <thread>

namespace netbox::test {
namespace {

struct CapCase {
  const char* name;
  const char* limits;  // JSON members of "limits"
  std::size_t limit;
  const char* rule;
  bool two_hosts;      // spread over two hosts (so the per-host cap is not the one hit)
};

class CapsTest : public ProxyTest, public ::testing::WithParamInterface<CapCase> {};

TEST_P(CapsTest, ExactlyTheLimitGetsThroughUnderConcurrentLoad) {
  const auto& c = GetParam();
  start_proxy(base_policy(std::string(R"("allow": ["upstream.test", "second.test"],
      "resolve": {"upstream.test": ["127.0.0.1"], "second.test": ["127.0.0.1"]}, "limits": {)") + c.limits + "}"),
              {}, 2);
  constexpr int kClients = 12;
  std::atomic<int> ok{0}, capped{0}, other{0};
  std::atomic<bool> retry_after_seen{true};
  std::barrier sync(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      const std::string host = c.two_hosts && i % 2 ? "second.test" : "upstream.test";
      ProxyConnection conn(port);
      sync.arrive_and_wait();  // everyone asks at once
      auto r = conn.send("CONNECT " + host + ":" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n", true);
      if (r.status == 200) ++ok;
      else if (r.status == 429) {
        ++capped;
        if (r.header("retry-after").empty() || r.header("x-netbox-decision") != "cap") retry_after_seen = false;
      } else {
        ++other;
      }
      sync.arrive_and_wait();  // hold every tunnel open until all have been answered
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), static_cast<int>(c.limit));
  EXPECT_EQ(capped.load(), kClients - static_cast<int>(c.limit));
  EXPECT_EQ(other.load(), 0);
  EXPECT_TRUE(retry_after_seen.load());

  std::size_t capped_rows = 0;
  for (const auto& row : rows()) {
    if (row.status == 429) {
      ++capped_rows;
      EXPECT_EQ(row.decision, "cap");  // as X-Netbox-Decision says
      EXPECT_EQ(row.rule, c.rule);
      EXPECT_NE(row.reason.find(c.rule), std::string::npos) << row.reason;
    }
  }
  EXPECT_EQ(capped_rows, kClients - c.limit);

  // Slots come back when tunnels close: a new tunnel fits again.
  for (int i = 0; i < 200; ++i) {
    if (server->counters().active_tunnels == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(proxy_connect(port, "upstream.test:" + std::to_string(upstream.port())).status, 200);
}

INSTANTIATE_TEST_SUITE_P(
    Limits, CapsTest,
    ::testing::Values(CapCase{"global", R"("max_connections": 4)", 4, "limits.max_connections", true},
                      CapCase{"per_agent", R"("max_connections_per_agent": 3)", 3, "limits.max_connections_per_agent", true},
                      CapCase{"per_host", R"("max_connections_per_host": 5)", 5, "limits.max_connections_per_host", false}),
    [](const ::testing::TestParamInfo<CapCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace netbox::test
