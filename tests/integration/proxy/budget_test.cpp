// Budgets and rates enforced (issue 25): an upload past limits.bytes_up, through a CONNECT
// tunnel and as a plain HTTP body, is cut at the budget (within one relay piece, 64 KiB),
// its row says so (decision `budget`, the budget named), and the agent's next request is
// refused 403 naming the budget; a download past bytes_down likewise; requests_per_minute
// answers 429 with Retry-After once the burst is spent. The agent here is a hostile client
// that simply keeps sending; the upstream is a sink that counts what reached it.
#include "proxy_fixture.hpp"

#include "support/raw_upstream.hpp"

#include <sys/socket.h>

#include <atomic>
#include <thread>

namespace netbox::test {
namespace {

constexpr std::uint64_t kBudget = 1024 * 1024;
constexpr std::uint64_t kPiece = 64 * 1024;  // one relay piece: the cut's tolerance

// Reads everything until the peer closes and counts it.
class Sink {
 public:
  Sink()
      : server_([this](RawUpstream&, int fd, std::size_t) {
          char buf[65536];
          while (true) {
            const auto n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            received_.fetch_add(static_cast<std::uint64_t>(n));
          }
        }) {}
  unsigned short port() const { return server_.port(); }
  std::uint64_t received() const { return received_.load(); }

 private:
  std::atomic<std::uint64_t> received_{0};
  RawUpstream server_;
};

class BudgetTest : public ProxyTest {
 protected:
  // A policy allowing sink.test (the sink) and upstream.test, with `limits`.
  void start(const std::string& limits) {
    start_proxy(base_policy(R"("allow": ["upstream.test", "sink.test"], "ports": [)" + std::to_string(upstream.port()) +
                            ", " + std::to_string(sink.port()) +
                            R"(], "resolve": {"upstream.test": ["127.0.0.1"], "sink.test": ["127.0.0.1"]},
                               "limits": {)" + limits + "}"));
  }
  std::string sink_authority() const { return "sink.test:" + std::to_string(sink.port()); }

  // Sends `total` bytes (or until the proxy stops taking them); answers how many it could write.
  static std::uint64_t flood(ProxyConnection& conn, std::uint64_t total) {
    const std::string chunk(kPiece, 'x');
    std::uint64_t sent = 0;
    try {
      while (sent < total) {
        conn.write(chunk);
        sent += chunk.size();
      }
    } catch (const std::exception&) {
      // the proxy cut the connection: expected once the budget is spent
    }
    return sent;
  }

  void expect_cut_row(const AuditRow& row, const std::string& rule, std::int64_t bytes) {
    EXPECT_EQ(row.decision, "budget");
    EXPECT_EQ(row.rule, rule);
    EXPECT_NE(row.reason.find(rule), std::string::npos) << row.reason;
    EXPECT_NE(row.reason.find(std::to_string(kBudget)), std::string::npos) << row.reason;
    EXPECT_GE(bytes, static_cast<std::int64_t>(kBudget - kPiece));
    EXPECT_LE(bytes, static_cast<std::int64_t>(kBudget + kPiece));
  }

  void expect_next_refused(const std::string& rule) {
    const auto next = proxy_get(port, upstream_url("/echo"));
    EXPECT_EQ(next.status, 403);
    EXPECT_EQ(next.header("x-netbox-decision"), "budget");
    EXPECT_NE(next.header("x-netbox-reason").find(rule), std::string::npos) << next.header("x-netbox-reason");
    const auto tunnel = proxy_connect(port, sink_authority());
    EXPECT_EQ(tunnel.status, 403);
    EXPECT_EQ(tunnel.header("x-netbox-decision"), "budget");
  }

  Sink sink;
};

TEST_F(BudgetTest, ConnectTunnelUploadIsCutAtBytesUp) {
  start(R"("bytes_up": ")" + std::to_string(kBudget) + R"(")");
  {
    ProxyConnection conn(port);
    ASSERT_EQ(conn.send("CONNECT " + sink_authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
    flood(conn, 8 * kBudget);
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  const auto& tunnel = all.front();
  EXPECT_EQ(tunnel.kind, "connect");
  expect_cut_row(tunnel, "limits.bytes_up", tunnel.bytes_up);
  EXPECT_LE(sink.received(), kBudget + kPiece);
  expect_next_refused("limits.bytes_up");
}

TEST_F(BudgetTest, PlainHttpBodyIsCutAtBytesUp) {
  start(R"("bytes_up": ")" + std::to_string(kBudget) + R"(")");
  {
    ProxyConnection conn(port);
    const std::uint64_t length = 8 * kBudget;
    conn.write("POST http://" + sink_authority() + "/upload HTTP/1.1\r\nHost: " + sink_authority() +
               "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n");
    flood(conn, length);
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  const auto& post = all.front();
  EXPECT_EQ(post.kind, "http");
  EXPECT_EQ(post.status, 403);
  expect_cut_row(post, "limits.bytes_up", post.bytes_up);
  EXPECT_LE(sink.received(), kBudget + kPiece + 4096);  // the head, then the body up to the budget
  expect_next_refused("limits.bytes_up");
}

TEST_F(BudgetTest, DownloadIsCutAtBytesDown) {
  start(R"("bytes_down": ")" + std::to_string(kBudget) + R"(")");
  const auto big = proxy_get(port, upstream_url("/big?n=" + std::to_string(8 * kBudget)));
  EXPECT_LT(big.body.size(), 8 * kBudget);
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  expect_cut_row(all.front(), "limits.bytes_down", all.front().bytes_down);
  const auto next = proxy_get(port, upstream_url("/echo"));
  EXPECT_EQ(next.status, 403);
  EXPECT_EQ(next.header("x-netbox-decision"), "budget");
}

TEST_F(BudgetTest, DestinationBudgetCutsOnlyItsHosts) {
  start(R"("destinations": [{"host": "sink.test", "bytes_up": ")" + std::to_string(kBudget) + R"("}])");
  {
    ProxyConnection conn(port);
    ASSERT_EQ(conn.send("CONNECT " + sink_authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
    flood(conn, 8 * kBudget);
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  expect_cut_row(all.front(), "limits.destinations[0] sink.test bytes_up", all.front().bytes_up);
  EXPECT_EQ(proxy_connect(port, sink_authority()).status, 403);
  EXPECT_EQ(proxy_get(port, upstream_url("/echo")).status, 200);  // another host: its own budget, none
}

TEST_F(BudgetTest, RequestsPerMinuteAnswers429WithRetryAfter) {
  start(R"("requests_per_minute": 2, "burst": 3)");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(proxy_get(port, upstream_url("/echo")).status, 200) << i;
  const auto over = proxy_get(port, upstream_url("/echo"));
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.header("x-netbox-decision"), "cap");
  // One token every 30 s: the next comes in at most 30 s, never 0.
  const int after = std::stoi(over.header("retry-after").empty() ? "0" : over.header("retry-after"));
  EXPECT_GE(after, 1);
  EXPECT_LE(after, 30);
  EXPECT_NE(over.header("x-netbox-reason").find("limits.requests_per_minute"), std::string::npos);
  const auto last = last_row();
  EXPECT_EQ(last.status, 429);
  EXPECT_EQ(last.decision, "cap");
  EXPECT_EQ(last.rule, "limits.requests_per_minute");
}

}  // namespace
}  // namespace netbox::test
