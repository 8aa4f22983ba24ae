// Hostile upstreams, as raw loopback TCP servers: one that never answers (504), one with
// an endless body (relayed with backpressure, proxy memory flat), malformed responses
// (502, the connection never pooled), and a reset in the middle of a body (the agent's
// connection is cut; the audit row has the error and the bytes that moved).
#include "proxy_fixture.hpp"
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/raw_upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

std::string policy_for(unsigned short upstream_port, const std::string& limits = {}) {
  return R"({"version": 1, "allow": ["hostile.test"], "ports": [)" + std::to_string(upstream_port) +
         R"(], "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"hostile.test": ["127.0.0.1"]})" +
         (limits.empty() ? std::string() : ", \"limits\": " + limits) + "}";
}

std::string get(unsigned short upstream_port, const std::string& path = "/") {
  return "GET http://hostile.test:" + std::to_string(upstream_port) + path + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n";
}

// Waits until the peer closes or the server stops.
void hold_open(RawUpstream& self, int fd) {
  while (!self.stopping()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char buf[4096];
      if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
    }
  }
}

int connect_to(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the response head is complete; returns it, leaving body bytes in `rest`.
std::string read_response_head(int fd, std::string& rest) {
  std::string got;
  char buf[65536];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return {};
    got.append(buf, static_cast<std::size_t>(n));
  }
  const auto end = got.find("\r\n\r\n") + 4;
  rest = got.substr(end);
  return got.substr(0, end);
}

class HostileUpstreams : public ProxyTest {};

TEST_F(HostileUpstreams, UpstreamThatNeverAnswersGets504AtTheTimeout) {
  RawUpstream silent([](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    hold_open(self, fd);
  });
  start_proxy(policy_for(silent.port(), R"({"idle_timeout_ms": 600})"));
  ProxyConnection c(port);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = c.send(get(silent.port()));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  EXPECT_NE(r.header("x-netbox-reason").find("did not answer within 600 ms"), std::string::npos)
      << r.header("x-netbox-reason");
  EXPECT_GE(took, 500ms);
  EXPECT_EQ(silent.requests(), 1U);
  const auto row = last_row();
  EXPECT_EQ(row.status, 504);
  EXPECT_EQ(row.decision, "error");
  EXPECT_NE(row.error.find("did not answer"), std::string::npos) << row.error;
}

// Each malformed answer becomes a 502 with a reason, and the connection it came on is
// never used again: the next request opens a new one.
TEST_F(HostileUpstreams, MalformedResponsesGet502AndTheirConnectionIsNeverPooled) {
  const std::vector<std::pair<std::string, std::string>> answers{
      {"garbage status line", "HTPT/1.1 two hundred\r\n\r\n"},
      {"header without colon", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nNo colon here\r\n\r\nok"},
      {"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n"},
      {"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nok\r\n"},
      {"Content-Length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok"},
      {"two Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!"},
      // Beast takes this (a coding read until the close, a length read by): the agent would
      // get both, and its client might take either.
      {"a coding other than chunked and Content-Length",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok"},
  };
  for (const auto& [what, bad] : answers) {
    SCOPED_TRACE(what);
    std::atomic<bool> reused_after_bad{false};
    // Connection 0 answers its first request well (so it is pooled), its second with
    // `bad`, and then waits: a third request on it would mean it was pooled again.
    RawUpstream answering([&, bad = bad](RawUpstream& self, int fd, std::size_t index) {
      std::string pending;
      for (int k = 0; !self.read_head(fd, pending).empty(); ++k) {
        if (index == 0 && k == 1) {
          if (!send_all(fd, bad)) return;
          continue;
        }
        if (index == 0 && k >= 2) reused_after_bad = true;
        if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) return;
      }
    });
    start_proxy(policy_for(answering.port()), {}, 1);  // one io thread: one upstream pool
    ProxyConnection c(port);
    auto r = c.send(get(answering.port(), "/1"));
    EXPECT_EQ(r.status, 200);
    ProxyConnection c2(port);
    r = c2.send(get(answering.port(), "/2"));
    EXPECT_EQ(r.status, 502) << r.body;
    EXPECT_EQ(r.header("x-netbox-decision"), "error");
    EXPECT_NE(r.header("x-netbox-reason").find("not valid HTTP"), std::string::npos) << r.header("x-netbox-reason");
    const auto row = last_row();
    EXPECT_EQ(row.status, 502);
    EXPECT_FALSE(row.error.empty());
    ProxyConnection c3(port);
    r = c3.send(get(answering.port(), "/3"));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(reused_after_bad) << "the connection that answered garbage was pooled and reused";
    EXPECT_EQ(answering.connections(), 2U);
    stop_proxy();
  }
}

// The upstream resets after part of a Content-Length body: the agent's connection is
// reset (not ended as if the body were complete), the row has the error and bytes_down
// equal to what reached the agent.
TEST_F(HostileUpstreams, ResetMidBodyCutsTheAgentAndRecordsTheBytesThatMoved) {
  constexpr std::size_t kSent = 300000;
  std::atomic<bool> agent_has_them{false};
  RawUpstream resetting([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + std::string(kSent, 'r'))) return;
    for (int i = 0; i < 400 && !agent_has_them && !self.stopping(); ++i) std::this_thread::sleep_for(25ms);
    reset_on_close(fd);
  });
  start_proxy(policy_for(resetting.port()));
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, get(resetting.port())));
  std::string body;
  const auto head = read_response_head(fd, body);
  ASSERT_NE(head.find("200 OK"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Length: 1000000"), std::string::npos) << head;
  char buf[65536];
  while (body.size() < kSent) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << "the connection ended after " << body.size() << " bytes";
    body.append(buf, static_cast<std::size_t>(n));
  }
  agent_has_them = true;
  ssize_t n = 0;
  std::size_t extra = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) extra += static_cast<std::size_t>(n);
  const int err = errno;
  ::close(fd);
  EXPECT_EQ(extra, 0U);
  EXPECT_EQ(n, -1) << "the agent saw a clean end of a body that was cut short";
  EXPECT_EQ(err, ECONNRESET);
  const auto row = last_row();
  EXPECT_EQ(row.status, 200);
  EXPECT_NE(row.error.find("reading the response body failed"), std::string::npos) << row.error;
  EXPECT_EQ(row.bytes_down, static_cast<std::int64_t>(kSent));
}

// A chunked answer whose trailer never ends: Beast's limits do not count trailers, and
// the proxy held every byte of one until it ran out of memory. Now past the read buffer's
// bound the upstream is dropped and the agent's answer is cut (reset, never a clean end).
TEST_F(HostileUpstreams, AnEndlessTrailerIsCutNotHeld) {
  constexpr std::size_t kEndless = 256u * 1024 * 1024;
  std::atomic<std::size_t> sent{0};
  RawUpstream endless([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: ")) return;
    const std::string piece(64 * 1024, 't');
    while (!self.stopping() && sent < kEndless && send_all(fd, piece)) sent += piece.size();
  });
  start_proxy(policy_for(endless.port()));
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, get(endless.port())));
  std::string got;
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  EXPECT_LT(sent.load(), kEndless) << "the proxy took 256 MiB of one trailer";
  EXPECT_EQ(got.find("0\r\n\r\n"), std::string::npos) << "the agent saw the cut answer end cleanly: " << got.substr(0, 300);
  const auto row = last_row();
  EXPECT_FALSE(row.error.empty());
}

// --- an endless body through a proxy process --------------------------------------

TEST(HostileUpstreamsProcess, EndlessBodyIsRelayedWithBackpressureAndFlatMemory) {
  std::atomic<std::uint64_t> sent{0};
  RawUpstream endless([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")) return;  // until close
    const std::string block(256 * 1024, 'e');
    while (!self.stopping() && send_all(fd, block)) sent += block.size();
  });
  TempDir dir;
  const auto policy = dir.write("policy.json", policy_for(endless.port()));
  const auto port = free_port();
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db"), dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();

  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, get(endless.port())));
  std::string first;
  ASSERT_FALSE(read_response_head(fd, first).empty());
  std::uint64_t received = first.size();
  char buf[256 * 1024];
  auto read_upto = [&](std::uint64_t total) {
    while (received < total) {
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      received += static_cast<std::uint64_t>(n);
    }
    return true;
  };
  ASSERT_TRUE(read_upto(4u << 20));

  // The agent stops reading: the buffers between fill, and the proxy stops reading the
  // upstream, whose writes then block.
  std::this_thread::sleep_for(700ms);
  const auto stalled_a = sent.load();
  std::this_thread::sleep_for(500ms);
  const auto stalled_b = sent.load();
  EXPECT_LT(stalled_b - stalled_a, 1u << 20) << "the upstream kept sending while the agent read nothing";
  EXPECT_LT(static_cast<std::int64_t>(stalled_b) - static_cast<std::int64_t>(received), 48ll << 20)
      << "far more was read from the upstream than the agent took";
  const auto rss_before = rss_kib(proxy.pid());

  // Then 200 MiB pass; the proxy holds one 64 KiB piece at a time.
  ASSERT_TRUE(read_upto(received + (200ull << 20)));
  const auto rss_after = rss_kib(proxy.pid());
  std::printf("proxy RSS %zu KiB -> %zu KiB after %llu MiB relayed\n", rss_before, rss_after,
              static_cast<unsigned long long>(received >> 20));
  EXPECT_LT(rss_after, rss_before + 16 * 1024) << "proxy memory grew with the body";
  EXPECT_LT(static_cast<std::int64_t>(sent.load()) - static_cast<std::int64_t>(received), 48ll << 20);
  ::close(fd);
  EXPECT_TRUE(proxy.running()) << proxy.log();
}

}  // namespace
}  // namespace netbox::test
