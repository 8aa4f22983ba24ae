// Budgets and bandwidth on WebSocket relays (issue 25): once the upstream has answered 101,
// the connection's bytes are charged to the agent's budgets and paced like a tunnel's. An
// upload past limits.bytes_up (or a destination's) over a WebSocket, on plain HTTP and on an
// inspected host, is cut at the budget (within one relay piece), both sides are closed, the
// handshake's row says `budget` naming the limit, and the agent's next request is refused
// 403; under bandwidth_up a WebSocket upload is slowed. The agent is a hostile client that
// streams one large binary message; the upstream is the real WebSocket echo server, which
// answers only once a message is whole, so nothing comes back while the agent uploads.
#include "agent_tls.hpp"
#include "credentials_fixture.hpp"
#include "proxy_fixture.hpp"

#include "support/websocket_frames.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <string>

namespace netbox::test {
namespace {

constexpr std::uint64_t kBudget = 1024 * 1024;
constexpr std::uint64_t kPiece = 64 * 1024;  // the cut's tolerance: one relay buffer at most

std::string handshake_fields() { return std::string(kWebSocketHandshake); }

void expect_cut_row(const AuditRow& row, const std::string& rule) {
  EXPECT_EQ(row.status, 101);
  EXPECT_EQ(row.decision, "budget");
  EXPECT_EQ(row.rule, rule);
  EXPECT_NE(row.reason.find(rule), std::string::npos) << row.reason;
  EXPECT_NE(row.reason.find(std::to_string(kBudget)), std::string::npos) << row.reason;
  EXPECT_GE(row.bytes_up, static_cast<std::int64_t>(kBudget - kPiece));
  EXPECT_LE(row.bytes_up, static_cast<std::int64_t>(kBudget + kPiece));
}

class WebSocketBudget : public ProxyTest {
 protected:
  void start(const std::string& limits) { start_proxy(base_policy(R"("limits": {)" + limits + "}")); }
  // A WebSocket to the echo upstream through the proxy door: answered 101.
  void open(ProxyConnection& conn) {
    const auto authority = "upstream.test:" + std::to_string(upstream.port());
    const auto reply =
        conn.send("GET " + upstream_url("/ws") + " HTTP/1.1\r\nHost: " + authority + "\r\n" + handshake_fields());
    ASSERT_EQ(reply.status, 101) << reply.error;
  }
  // One binary message of `total` bytes, written in 64 KiB pieces until the proxy stops
  // taking them; answers how many payload bytes it could write.
  static std::uint64_t upload(ProxyConnection& conn, std::uint64_t total) {
    const std::string chunk(kPiece, 'x');
    std::uint64_t sent = 0;
    try {
      conn.write(client_binary_frame_head(total));
      for (; sent < total; sent += chunk.size()) conn.write(chunk);
    } catch (const std::exception&) {
      // the proxy closed the connection: expected once the budget is spent
    }
    return sent;
  }
};

TEST_F(WebSocketBudget, AnUploadPastBytesUpIsCutAtTheBudget) {
  ::signal(SIGPIPE, SIG_IGN);
  start(R"("bytes_up": ")" + std::to_string(kBudget) + R"(")");
  {
    ProxyConnection conn(port);
    open(conn);
    EXPECT_LT(upload(conn, 8 * kBudget), 8 * kBudget) << "the whole upload went through";
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  expect_cut_row(all.front(), "limits.bytes_up");
  const auto next = proxy_get(port, upstream_url("/echo"));
  EXPECT_EQ(next.status, 403);
  EXPECT_EQ(next.header("x-netbox-decision"), "budget");
  EXPECT_NE(next.header("x-netbox-reason").find("limits.bytes_up"), std::string::npos)
      << next.header("x-netbox-reason");
}

// limits.bandwidth_up of 1 MiB/s: a 3 MiB message (a bucket of 1 MiB) takes about 2 s to
// reach the upstream, whose echo starts only then; unshaped, milliseconds. One-sided bound.
TEST_F(WebSocketBudget, BandwidthUpShapesAnUploadWithoutDroppingAByte) {
  constexpr std::uint64_t kShaped = 3 * 1024 * 1024;
  start(R"("bandwidth_up": "1M")");
  std::chrono::steady_clock::duration took{};
  {
    ProxyConnection conn(port, std::chrono::seconds(30));
    open(conn);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(upload(conn, kShaped), kShaped);
    const auto echo = conn.read_exactly(2);  // the echo's first frame: the whole message arrived
    took = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(echo.size(), 2U);
    EXPECT_EQ(echo[0] & 0x0f, 0x2) << "not the echo of a binary message";  // maybe in fragments
  }
  EXPECT_GE(took, std::chrono::milliseconds(1900));
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().decision, "allow");
  EXPECT_GE(all.front().bytes_up, static_cast<std::int64_t>(kShaped));  // paced, never dropped
}

// On an inspected host the WebSocket runs inside the agent's TLS: the same meter cuts it,
// here under a destination's budget.
class InspectedWebSocketBudget : public CredentialsFixture {};

TEST_F(InspectedWebSocketBudget, AnUploadPastADestinationBudgetIsCut) {
  ::signal(SIGPIPE, SIG_IGN);  // the agent writes on after the cut
  auto j = nlohmann::json::parse(base_policy());
  j["allow"] = {"upstream.test"};
  j["ports"] = {tls_upstream.port()};
  j["inspect"] = {"upstream.test"};
  j["limits"] = {{"destinations", {{{"host", "upstream.test"}, {"bytes_up", std::to_string(kBudget)}}}}};
  start_proxy(j.dump());
  const std::string authority = "upstream.test:" + std::to_string(tls_upstream.port());
  {
    AgentTls tls(port, authority);
    ASSERT_TRUE(tls.connected());
    tls.send("GET /ws HTTP/1.1\r\nHost: " + authority + "\r\n" + handshake_fields());
    const auto head = tls.read_until("\r\n\r\n");
    ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0U) << head;
    const std::uint64_t length = 8 * kBudget;
    tls.send(client_binary_frame_head(length));
    const std::string chunk(kPiece, 'x');
    for (std::uint64_t sent = 0; sent < length; sent += chunk.size()) tls.send(chunk);  // stops taking at the cut
  }
  const std::string rule = "limits.destinations[0] upstream.test bytes_up";
  bool cut = false;
  std::string seen;
  for (const auto& r : rows()) {
    seen += r.kind + " " + r.method + " " + r.decision + " " + r.rule + " " + std::to_string(r.bytes_up) + "\n";
    if (r.decision != "budget") continue;
    cut = true;
    EXPECT_EQ(r.method, "GET");
    expect_cut_row(r, rule);
  }
  EXPECT_TRUE(cut) << "no row was cut at the budget:\n" << seen;
  const auto next = proxy_connect(port, authority);
  EXPECT_EQ(next.status, 403);
  EXPECT_EQ(next.header("x-netbox-decision"), "budget");
}

}  // namespace
}  // namespace netbox::test
