// CONNECT tunnels: relaying, half-close, denied ports, the idle timeout.
#include "proxy_fixture.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace netbox::test {
namespace {

class TunnelTest : public ProxyTest {
 protected:
  AuditRow completed_row(std::size_t index) {
    for (int i = 0; i < 500; ++i) {
      auto all = rows();
      if (all.size() > index && all[index].duration_ms) return all[index];
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "row " << index << " was not completed";
    return {};
  }
  std::string authority() const { return "upstream.test:" + std::to_string(upstream.port()); }
};

// Pipes this process holds (the proxy runs in it): a tunnel's splice pipes show up here.
int open_pipes() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    if (std::filesystem::read_symlink(e.path(), link_ec).string().starts_with("pipe:")) ++n;
  }
  return n;
}


TEST_F(TunnelTest, ConnectRelaysSeveralMebibytesBothWaysByteExact) {
  start_proxy(base_policy());
  const auto body = pattern_bytes(6 * 1024 * 1024 + 123);
  {
    ProxyConnection c(port);
    auto est = c.send("CONNECT " + authority() + " HTTP/1.1\r\nHost: " + authority() + "\r\n\r\n", true);
    ASSERT_EQ(est.status, 200) << est.error;
    // Through the tunnel, the upstream sees our own bytes: it echoes the body back.
    auto r = c.send("POST /body HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n" + body);
    ASSERT_EQ(r.status, 200) << r.error;
    ASSERT_EQ(r.body.size(), body.size());
    EXPECT_TRUE(r.body == body) << "the relayed body differs";
  }
  auto row = completed_row(0);
  EXPECT_EQ(row.kind, "connect");
  EXPECT_EQ(row.method, "CONNECT");
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(row.status, 200);
  EXPECT_EQ(row.resolved_addr, "127.0.0.1");
  EXPECT_GT(row.bytes_up, static_cast<std::int64_t>(body.size()));
  EXPECT_GT(row.bytes_down, static_cast<std::int64_t>(body.size()));
}

TEST_F(TunnelTest, HalfCloseFromTheAgentStillDeliversTheWholeAnswer) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
  c.write("GET /big?n=200000 HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n");
  c.shutdown_send();
  const std::string head_end = "\r\n\r\n";
  std::string got;
  while (got.find(head_end) == std::string::npos) got += c.read_exactly(1);
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  auto body = c.read_exactly(200000);
  EXPECT_TRUE(body == pattern_bytes(200000));
}

TEST_F(TunnelTest, BufferRelayMovesSeveralMebibytesByteExactAndHonoursHalfClose) {
  configure = [](proxy::ProxyOptions& o) { o.tunnel_relay = proxy::TunnelRelay::buffer; };
  start_proxy(base_policy());
  const auto body = pattern_bytes(3 * 1024 * 1024 + 77);
  {
    ProxyConnection c(port);
    ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
    auto r = c.send("POST /body HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body);
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_TRUE(r.body == body) << "the relayed body differs";
    c.write("GET /big?n=300000 HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n");
    c.shutdown_send();
    std::string got;
    while (got.find("\r\n\r\n") == std::string::npos) got += c.read_exactly(1);
    EXPECT_NE(got.find("200 OK"), std::string::npos);
    EXPECT_TRUE(c.read_exactly(300000) == pattern_bytes(300000));
  }
  auto row = completed_row(0);
  EXPECT_EQ(row.status, 200);
  EXPECT_GT(row.bytes_up, static_cast<std::int64_t>(body.size()));
  EXPECT_GT(row.bytes_down, static_cast<std::int64_t>(body.size() + 300000));
}

// A burst begins through a small copy buffer and goes on through a pipe once it fills
// that buffer (tunnel.hpp): small and large bursts, one after another in both directions,
// must arrive byte-exact, and the row must count exactly the bytes the agent sent.
TEST_F(TunnelTest, SmallAndLargeBurstsInTurnArriveByteExactAndAreCountedExactly) {
  start_proxy(base_policy());
  std::uint64_t sent_up = 0;
  std::uint64_t echoed = 0;
  {
    ProxyConnection c(port);
    ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
    for (std::size_t size : {100u, 300000u, 5u, 16384u, 16385u, 70000u, 1u}) {
      const auto body = pattern_bytes(size);
      const std::string request = "POST /body HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body;
      sent_up += request.size();
      auto r = c.send(request);
      ASSERT_EQ(r.status, 200) << "body of " << size << " bytes: " << r.error;
      ASSERT_EQ(r.body.size(), size);
      EXPECT_TRUE(r.body == body) << "the echo of " << size << " bytes differs";
      echoed += size;
    }
  }
  auto row = completed_row(0);
  EXPECT_EQ(row.status, 200);
  EXPECT_EQ(row.bytes_up, static_cast<std::int64_t>(sent_up));
  EXPECT_GT(row.bytes_down, static_cast<std::int64_t>(echoed));
}

// Thousands of idle tunnels must not cost thousands of pipes: a direction holds its pipe
// only while bytes are on their way.
TEST_F(TunnelTest, AnIdleTunnelHoldsNoRelayPipes) {
  start_proxy(base_policy());
  const int before = open_pipes();
  ProxyConnection c(port);
  ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
  for (int i = 0; i < 3; ++i) {
    auto r = c.send("GET /big?n=100000 HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
    ASSERT_EQ(r.status, 200) << r.error;
    ASSERT_EQ(r.body.size(), 100000u);
  }
  // The last splice that finds nothing to read closes the pipe, a moment after the bytes left.
  int now = open_pipes();
  for (int i = 0; i < 100 && now > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    now = open_pipes();
  }
  EXPECT_EQ(now, before) << "the open, idle tunnel still holds relay pipes";
  // And it still relays afterwards.
  EXPECT_EQ(c.send("GET /big?n=1000 HTTP/1.1\r\nHost: upstream.test\r\n\r\n").status, 200);
}

TEST_F(TunnelTest, ConnectWithoutAPortIsMalformed) {
  start_proxy(base_policy());
  auto r = proxy_connect(port, "upstream.test");
  EXPECT_EQ(r.status, 400);
}

TEST_F(TunnelTest, IdleTunnelIsClosedAfterTheIdleTimeout) {
  start_proxy(base_policy(R"("limits": {"idle_timeout_ms": 300})"));
  ProxyConnection c(port);
  ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  auto row = completed_row(0);
  EXPECT_EQ(row.status, 200);
  EXPECT_NE(row.error.find("idle"), std::string::npos) << row.error;
}

TEST_F(TunnelTest, UpstreamRefusingTheTunnelGives502) {
  UpstreamServer gone;
  const auto dead = gone.port();
  gone.stop();
  start_proxy(base_policy(R"("ports": [)" + std::to_string(dead) + "]"));
  auto r = proxy_connect(port, "upstream.test:" + std::to_string(dead));
  EXPECT_EQ(r.status, 502);
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");  // allowed, then the dial failed: as the header says
  EXPECT_EQ(row.status, 502);
  EXPECT_FALSE(row.error.empty());
}

TEST_F(TunnelTest, StoppingTheProxyClosesOpenTunnelsAfterTheGraceAndCompletesTheirRows) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  ASSERT_EQ(c.send("CONNECT " + authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
  server->stop();  // 500 ms grace in the fixture; the tunnel stays idle through it
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  auto all = read_rows();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].duration_ms.has_value());
  EXPECT_NE(all[0].error.find("shut down"), std::string::npos) << all[0].error;
}

}  // namespace
}  // namespace netbox::test
