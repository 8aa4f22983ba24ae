// WebSockets and slow drips on the HTTP loop (issue 23), through the proxy door (the door
// suite, door_conformance_test.cpp, puts the WebSocket cases to every door): an upgraded
// connection ends at the idle limit with its row, an upgrade netbox does not carry or an
// upstream switching to something else is refused with a reason, and a request head or
// body trickling a byte at a time ends at its overall limit, with a row saying why.
#include "proxy_fixture.hpp"
#include "support/raw_upstream.hpp"
#include "support/websocket_frames.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

// The agent's raw connection to the proxy door; every wait is bounded.
class Agent {
 public:
  explicit Agent(unsigned short port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ADD_FAILURE() << "connect failed";
  }
  ~Agent() { ::close(fd_); }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  bool send(std::string_view s) { return send_all(fd_, s); }
  std::string read_head() {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) head.push_back(c);
    return head;
  }
  std::string read_exactly(std::size_t n) {
    std::string out(n, '\0');
    const auto got = ::recv(fd_, out.data(), n, MSG_WAITALL);
    out.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return out;
  }
  std::string read_to_end() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
  // True once the proxy has closed the connection (EOF or reset) within `wait`.
  bool closed_within(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }

 private:
  int fd_;
};

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

class WebSockets : public ProxyTest {
 protected:
  std::string authority() const { return "upstream.test:" + std::to_string(upstream.port()); }
  std::string handshake(const std::string& path = "/ws") const {
    return "GET " + upstream_url(path) + " HTTP/1.1\r\nHost: " + authority() + "\r\n" + std::string(kWebSocketHandshake);
  }
};

// Through the proxy door to a real WebSocket upstream: 101, a message echoed, and once
// both sides are quiet for idle_timeout_ms the relay ends; the handshake's row has the
// 101, the bytes both ways and why it ended.
TEST_F(WebSockets, RelayEchoesThenEndsAtTheIdleLimit) {
  start_proxy(base_policy(R"("limits": {"idle_timeout_ms": 700})"));
  Agent a(port);
  ASSERT_TRUE(a.send(handshake()));
  const auto head = a.read_head();
  ASSERT_EQ(status_of(head), 101) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), std::string::npos) << head;
  ASSERT_TRUE(a.send(client_text_frame("ping")));
  EXPECT_EQ(a.read_exactly(6), server_text_frame("ping"));
  EXPECT_TRUE(a.closed_within(20s)) << "the idle relay was never ended";
  const auto row = last_row();
  EXPECT_EQ(row.status, 101);
  EXPECT_EQ(row.decision, "allow");
  EXPECT_GT(row.bytes_up, 10);  // the handshake's head and the masked frame
  EXPECT_LT(row.bytes_up, 10 + 512);
  EXPECT_EQ(row.bytes_down, 6);  // its echo
  EXPECT_NE(row.error.find("limits.idle_timeout_ms"), std::string::npos) << row.error;
}

// Any upgrade but a WebSocket is refused with a reason, never forwarded without its
// Upgrade as a different request.
TEST_F(WebSockets, OtherUpgradesAreRefusedWithAReason) {
  start_proxy(base_policy());
  const std::string line = "GET " + upstream_url("/") + " HTTP/1.1\r\nHost: " + authority() + "\r\n";
  struct Try {
    std::string fields;
    int status;
    std::string reason;
  };
  for (const auto& t : {Try{"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n",
                            501, "netbox relays HTTP/1.1 only"},
                        Try{"Connection: Upgrade\r\nUpgrade: TLS/1.0\r\n", 501, "to websocket only, not to 'TLS/1.0'"},
                        Try{"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n", 400, "must list upgrade in Connection"}}) {
    SCOPED_TRACE(t.fields);
    Agent a(port);
    ASSERT_TRUE(a.send(line + t.fields + "\r\n"));
    const auto answer = a.read_to_end();
    EXPECT_EQ(status_of(answer), t.status) << answer;
    EXPECT_NE(answer.find(t.reason), std::string::npos) << answer;
    const auto row = last_row();
    EXPECT_EQ(row.status, t.status);
    EXPECT_EQ(row.rule, "upgrade");
    EXPECT_NE(row.reason.find(t.reason), std::string::npos) << row.reason;
  }
  EXPECT_EQ(upstream.requests(), 0U);
}

// An upstream's 101 to a request that asked for no upgrade, or to a WebSocket one with
// another protocol, is a broken upstream: 502, nothing of it relayed.
TEST_F(WebSockets, AnUpstreamSwitchingUnaskedIs502) {
  RawUpstream switcher([](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    send_all(fd, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nRAW");
  });
  start_proxy(R"({"version": 1, "allow": ["switch.test"], "ports": [)" + std::to_string(switcher.port()) +
              R"(], "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"switch.test": ["127.0.0.1"]}})");
  const std::string target = "http://switch.test:" + std::to_string(switcher.port()) + "/";
  for (const std::string& ending : {std::string("Connection: close\r\n\r\n"), std::string(kWebSocketHandshake)}) {
    Agent a(port);
    ASSERT_TRUE(a.send("GET " + target + " HTTP/1.1\r\nHost: switch.test\r\n" + ending));
    const auto answer = a.read_to_end();
    EXPECT_EQ(status_of(answer), 502) << answer;
    EXPECT_EQ(answer.find("RAW"), std::string::npos) << "bytes after the 101 reached the agent";
  }
}

// A head trickling a byte every 50 ms never pauses for long, but its whole time is
// bounded (header_timeout_ms): the connection ends before the head does, and the row
// says why.
TEST_F(WebSockets, TricklingHeadEndsAndTheRowSaysWhy) {
  start_proxy(base_policy(R"("limits": {"header_timeout_ms": 500, "idle_timeout_ms": 5000})"));
  const std::string slow = "GET " + upstream_url("/ws") + " HTTP/1.1\r\nHost: " + authority() + "\r\nX-Slow: " +
                           std::string(400, 's') + "\r\n\r\n";
  Agent a(port);
  bool ended = false;
  for (char ch : slow) {
    if (!a.send(std::string(1, ch)) || a.closed_within(50ms)) {
      ended = true;
      break;
    }
  }
  ASSERT_TRUE(ended) << "the whole head went through a byte at a time";
  EXPECT_EQ(upstream.requests(), 0U);
  // The agent may see the close a moment before the row is written.
  for (int i = 0; i < 400 && read_rows().empty(); ++i) std::this_thread::sleep_for(25ms);
  const auto row = last_row();
  EXPECT_EQ(row.status, 408);
  EXPECT_EQ(row.rule, "limits.header_timeout_ms");
  EXPECT_NE(row.reason.find("within 500 ms of its first byte"), std::string::npos) << row.reason;
}

// A body trickling a byte every 20 ms stays within idle_timeout_ms between bytes, but
// falls below the minimum rate once that long has passed: it ends before it is whole.
TEST_F(WebSockets, TricklingBodyEndsAtTheMinimumRate) {
  start_proxy(base_policy(R"("limits": {"idle_timeout_ms": 600})"));
  Agent a(port);
  const std::size_t length = 600;  // 12 s at this pace, without the limit
  ASSERT_TRUE(a.send("POST " + upstream_url("/body") + " HTTP/1.1\r\nHost: " + authority() +
                     "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n"));
  bool ended = false;
  for (std::size_t i = 0; i < length; ++i) {
    if (!a.send("b") || a.closed_within(20ms)) {
      ended = true;
      break;
    }
  }
  ASSERT_TRUE(ended) << "the whole body went through a byte at a time";
  const auto row = last_row();
  EXPECT_EQ(row.status, 408);
  EXPECT_NE(row.error.find("slower than 1024 bytes/s"), std::string::npos) << row.error;
}

}  // namespace
}  // namespace netbox::test
