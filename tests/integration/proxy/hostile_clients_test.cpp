// Hostile agents: request smuggling (ambiguous framing), the head and body limits,
// slowloris, a client that never reads its response, and 10,000 idle connections. Each
// refusal is checked as the agent sees it (status, X-Netbox-Decision, reason, the
// connection closed), as the upstream sees it (nothing arrives) and in the audit row.
#include "proxy_fixture.hpp"
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/raw_upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

// A plain blocking socket to the proxy, for byte-level misbehaviour.
class RawClient {
 public:
  explicit RawClient(unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ADD_FAILURE() << "connect failed";
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  int fd() const { return fd_; }
  bool send(std::string_view s) { return send_all(fd_, s); }
  // True once the proxy has closed (EOF or reset); reads and discards what is pending.
  bool closed_within(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[65536];
        const auto n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return true;
        received += static_cast<std::size_t>(n);
      }
    }
    return false;
  }
  std::size_t received = 0;

 private:
  int fd_ = -1;
};

class HostileClients : public ProxyTest {
 protected:
  std::string url(const std::string& path = "/") const { return upstream_url(path); }
  std::string authority() const { return "upstream.test:" + std::to_string(upstream.port()); }

  // Sends `raw`, expects a refusal with `status` whose reason contains `fragment`, the
  // connection closed after it, nothing at the upstream, and an audit row saying so
  // (decision error, as the header). A body is read only once its request is admitted,
  // so a malformed body is found after the decision: its row keeps the policy's rule and
  // has the reason as its error.
  void expect_refused(const std::string& raw, int status, const std::string& fragment, bool admitted = false) {
    SCOPED_TRACE(raw.substr(0, 200));
    const auto before = upstream.requests();
    const auto rows_before = read_rows().size();
    ProxyConnection c(port, 10s);
    const auto r = c.send(raw);
    EXPECT_EQ(r.status, status) << r.error << "\n" << r.body;
    EXPECT_EQ(r.header("x-netbox-decision"), "error");
    EXPECT_NE(r.header("x-netbox-reason").find(fragment), std::string::npos) << r.header("x-netbox-reason");
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(c.closed_within(5s)) << "the proxy kept the connection open after an ambiguous request";
    const auto all = rows();
    ASSERT_EQ(all.size(), rows_before + 1) << "one audit row per refused request";
    const auto& row = all.back();
    EXPECT_EQ(row.status, status);
    EXPECT_EQ(row.decision, "error");
    if (admitted) {
      EXPECT_NE(row.error.find(fragment), std::string::npos) << row.error;
    } else {
      EXPECT_EQ(row.rule, "request");
      EXPECT_NE(row.reason.find(fragment), std::string::npos) << row.reason;
    }
    EXPECT_EQ(upstream.requests(), before) << "an ambiguous request reached the upstream";
  }
};

// Each ambiguous framing, with a second request smuggled after it: neither may arrive.
TEST_F(HostileClients, AmbiguousFramingIsRefusedAndNeverForwarded) {
  start_proxy(base_policy());
  const std::string line = "POST " + url("/body") + " HTTP/1.1\r\nHost: " + authority() + "\r\n";
  const std::string smuggled = "GET " + url("/smuggled") + " HTTP/1.1\r\nHost: " + authority() + "\r\n\r\n";
  const std::string chunked_body = "0\r\n\r\n" + smuggled;
  const std::string both = "the request has both Content-Length and Transfer-Encoding";

  expect_refused(line + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body, 400, both);
  expect_refused(line + "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n" + chunked_body, 400, both);
  expect_refused(line + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + smuggled, 400,
                 "more than one Content-Length");
  expect_refused(line + "Content-Length: 5\r\nContent-Length: 50\r\n\r\nhello" + smuggled, 400,
                 "more than one Content-Length");
  expect_refused(line + "Content-Length: 5, 5\r\n\r\nhello" + smuggled, 400, "is not a single decimal number");
  expect_refused(line + "Content-Length: +5\r\n\r\nhello" + smuggled, 400, "is not a single decimal number");
  // obs-fold: Beast would unfold this into a chunked Transfer-Encoding.
  expect_refused(line + "Transfer-Encoding:\r\n chunked\r\n\r\n" + chunked_body, 400, "folded header line");
  expect_refused(line + "X-Note: a\r\n\tb\r\nContent-Length: 0\r\n\r\n", 400, "folded header line");
  expect_refused("GET " + url() + " HTTP/1.1\nHost: " + authority() + "\n\n", 400, "bare LF");
  expect_refused("GET " + url() + " HTTP/1.1\r\nHost: " + authority() + "\nX-A: b\r\n\r\n", 400, "bare LF");
  expect_refused("GET " + url() + " HTTP/1.1\r\nHost: " + authority() + "\rX-A: b\r\n\r\n", 400,
                 "CR that is not followed by LF");
  for (const std::string te : {"chunked, identity", "identity, chunked", "xchunked", "Chunked", " chunked",
                               "chunked ", "\tchunked", "gzip", "chunked, chunked"}) {
    expect_refused(line + "Transfer-Encoding: " + te + "\r\n\r\n" + chunked_body, 400, "is not exactly 'chunked'");
  }
  expect_refused(line + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body, 400,
                 "more than one Transfer-Encoding");
  expect_refused("POST " + url("/body") + " HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body, 400,
                 "Transfer-Encoding with HTTP/1.0");
  // A chunk size beyond 64 bits: Beast reports it as a bad chunk.
  expect_refused(line + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nab\r\n0\r\n\r\n", 400,
                 "chunked request body is malformed", true);
  expect_refused(line + "Transfer-Encoding: chunked\r\n\r\n-2\r\nab\r\n0\r\n\r\n", 400,
                 "chunked request body is malformed", true);
  EXPECT_EQ(upstream.requests(), 0U);
}

// The strictness above must not cost well-formed requests: chunked and sized bodies are
// forwarded, framed by the proxy (its own chunks, without the agent's extensions, or one
// Content-Length).
TEST_F(HostileClients, WellFramedBodiesAreForwardedInTheProxysOwnFraming) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  auto r = c.send("POST " + url("/echo") + " HTTP/1.1\r\nHost: " + authority() +
                  "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"body\":\"hello world\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"Transfer-Encoding\":\"chunked\""), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("Content-Length"), std::string::npos) << r.body;
  r = c.send("POST " + url("/body") + " HTTP/1.1\r\nHost: " + authority() + "\r\nContent-Length:  5 \r\n\r\nhello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(upstream.requests(), 2U);
}

TEST_F(HostileClients, HeadLimitsAnswer431And414AtTheirDocumentedSizes) {
  // A plain upstream that reads heads of any size (the Beast test server stops at 8 KiB).
  RawUpstream big([](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    while (!self.read_head(fd, pending).empty())
      if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) return;
  });
  start_proxy(R"({"version": 1, "allow": ["big.test"], "ports": [)" + std::to_string(big.port()) +
              R"(], "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"big.test": ["127.0.0.1"]}})");
  const std::string base = "http://big.test:" + std::to_string(big.port()) + "/";

  auto with_fields = [&](std::size_t n) {  // n header lines in all, Host included
    std::string raw = "GET " + base + " HTTP/1.1\r\nHost: big.test\r\n";
    for (std::size_t i = 1; i < n; ++i) raw += "X-F" + std::to_string(i) + ": v\r\n";
    return raw + "\r\n";
  };
  EXPECT_EQ(ProxyConnection(port).send(with_fields(100)).status, 200);
  expect_refused(with_fields(101), 431, "more than 100 header fields");

  auto with_target = [&](std::size_t n) {
    return "GET " + base + std::string(n - base.size(), 'a') + " HTTP/1.1\r\nHost: big.test\r\n\r\n";
  };
  EXPECT_EQ(ProxyConnection(port).send(with_target(8192)).status, 200);
  expect_refused(with_target(8193), 414, "longer than 8192 bytes");
  // Refused as soon as the line is too long, without waiting for the rest of the head.
  {
    RawClient c(port);
    c.send("GET " + base + std::string(9000, 'a'));
    EXPECT_TRUE(c.closed_within(5s));
    EXPECT_GT(c.received, 0U) << "a 414 answer was expected before the close";
  }
  expect_refused("GET " + base + " HTTP/1.1\r\nHost: big.test\r\nX-Big: " + std::string(70 * 1024, 'b') + "\r\n\r\n",
                 431, "larger than 64 KiB");
  expect_refused("POST " + base + " HTTP/1.1\r\nHost: big.test\r\nContent-Length: 67108865\r\n\r\n", 413,
                 "larger than 64 MiB");
  EXPECT_EQ(big.requests(), 2U) << "only the two requests at the limits were forwarded";
}

// One header byte every 100 ms: the head timer (800 ms from the first byte) closes it,
// long before the idle timeout (5 s) would.
// A chunked body whose chunk extension or trailer never ends: Beast's limits count neither,
// and the proxy held every byte of one until it ran out of memory. Now past the read
// buffer's bound the request gets 400 saying why, and the connection ends.
TEST_F(HostileClients, AnEndlessChunkExtensionOrTrailerEndsTheRequestNotTheProxysMemory) {
  start_proxy(base_policy());
  for (const std::string endless : {"1;ext=", "1\r\nx\r\n0\r\nX-Trailer: "}) {
    SCOPED_TRACE(endless);
    RawClient c(port);
    ASSERT_TRUE(c.send("POST " + url("/upload") + " HTTP/1.1\r\nHost: " + authority() +
                       "\r\nTransfer-Encoding: chunked\r\n\r\n" + endless));
    // Sends until the proxy stops taking it (the socket buffers on both sides are some
    // MiB, and the proxy drains 1 MiB after its answer before it closes).
    const std::string piece(64 * 1024, 'x');
    constexpr std::size_t kEndless = 256u * 1024 * 1024;
    std::size_t sent = 0;
    while (sent < kEndless && c.send(piece)) sent += piece.size();
    EXPECT_LT(sent, kEndless) << "the proxy took 256 MiB of one chunk header or trailer";
    EXPECT_TRUE(c.closed_within(5s));
    const auto row = last_row();
    EXPECT_EQ(row.status, 400);
    EXPECT_NE(row.error.find("run past 128 KiB"), std::string::npos) << row.error;
  }
}

TEST_F(HostileClients, SlowlorisIsClosedByTheHeaderTimeout) {
  start_proxy(base_policy(R"("limits": {"header_timeout_ms": 800, "idle_timeout_ms": 5000})"));
  const std::string head = "GET " + url() + " HTTP/1.1\r\nHost: " + authority() + "\r\nX-Slow: " +
                           std::string(60, 's') + "\r\n\r\n";
  RawClient c(port);
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  for (char ch : head) {
    if (!c.send(std::string(1, ch)) || c.closed_within(100ms)) {
      closed = true;
      break;
    }
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(closed) << "the whole head went through a byte at a time";
  EXPECT_GE(took, 700ms);
  EXPECT_LT(took, 4s) << "closed by the idle timeout, not the header timeout";
  EXPECT_EQ(upstream.requests(), 0U);
  // The proxy keeps serving others.
  EXPECT_EQ(proxy_get(port, url("/after")).status, 200);
}

// The header timer starts at a request's first byte: a keep-alive agent may stay quiet
// between requests for longer than header_timeout_ms (up to idle_timeout_ms).
TEST_F(HostileClients, IdleKeepAliveWaitIsNotCutByTheHeaderTimeout) {
  start_proxy(base_policy(R"("limits": {"header_timeout_ms": 300, "idle_timeout_ms": 5000})"));
  ProxyConnection c(port);
  const std::string req = "GET " + url() + " HTTP/1.1\r\nHost: " + authority() + "\r\n\r\n";
  EXPECT_EQ(c.send(req).status, 200);
  std::this_thread::sleep_for(1s);
  auto r = c.send(req);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(upstream.connections(), 1U);
}

// An agent that asks for an endless download and never reads: the write to it times out
// (idle_timeout_ms), the proxy drops both connections and stays responsive.
TEST_F(HostileClients, ClientThatNeverReadsIsClosedByTheWriteTimeout) {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> upstream_saw_close{false};
  RawUpstream endless([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n")) return;
    const std::string block(64 * 1024, 'x');
    while (!self.stopping() && send_all(fd, block)) sent += block.size();
    upstream_saw_close = !self.stopping();
  });
  start_proxy(R"({"version": 1, "allow": ["endless.test", "upstream.test"], "ports": [)" +
              std::to_string(endless.port()) + ", " + std::to_string(upstream.port()) +
              R"(], "internal": {"allow": ["127.0.0.1/32"]},
                 "resolve": {"endless.test": ["127.0.0.1"], "upstream.test": ["127.0.0.1"]},
                 "limits": {"idle_timeout_ms": 1000}})");
  RawClient c(port);
  c.send("GET http://endless.test:" + std::to_string(endless.port()) + "/ HTTP/1.1\r\nHost: endless.test\r\n\r\n");
  // Never read: within a few timeouts the upstream sees its connection dropped.
  for (int i = 0; i < 200 && !upstream_saw_close; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(upstream_saw_close) << "the proxy kept relaying to a client that does not read";
  EXPECT_LT(sent.load(), 64ull << 20) << "the proxy read far more than it could deliver";
  EXPECT_TRUE(c.closed_within(10s)) << "the agent's connection was not closed";
  EXPECT_LT(c.received, sent.load());
  EXPECT_EQ(proxy_get(port, url("/after")).status, 200);
  const auto all = rows();
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0].host, "endless.test");
  EXPECT_NE(all[0].error.find("writing the response to the agent failed"), std::string::npos) << all[0].error;
}

// --- 10,000 idle connections against a proxy process ------------------------------

std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

TEST(HostileClientsProcess, TenThousandIdleConnectionsLeaveTheProxyAnsweringWithBoundedMemory) {
  constexpr std::size_t kIdle = 10000;
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  // The test holds one end of each connection and the proxy (a child) the other.
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < kIdle + 512)
    GTEST_SKIP() << "the hard RLIMIT_NOFILE (" << lim.rlim_max << ") is below " << kIdle + 512
                 << "; 10,000 idle connections need that many descriptors in this process and in the proxy";
  const rlimit saved = lim;
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? kIdle * 2 : lim.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);

  TempDir dir;
  UpstreamServer upstream;
  const auto policy = dir.write(
      "policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" + std::to_string(upstream.port()) +
                         R"(], "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"upstream.test": ["127.0.0.1"]}})");
  const auto port = free_port();
  // One client holds them all: the per-agent connection cap (fd_exhaustion_test.cpp) is
  // raised above them, since this test measures what an idle connection costs.
  const auto caps = std::to_string(kIdle + 64);
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db",
                                        {"--max-client-connections", caps, "--max-client-connections-per-agent", caps}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  const std::string url = "http://upstream.test:" + std::to_string(upstream.port()) + "/";
  ASSERT_EQ(proxy_get(port, url).status, 200);  // warm: threads, pool, audit writer
  const auto fds_before = open_fds(proxy.pid());
  const auto rss_before = rss_kib(proxy.pid());

  std::vector<int> idle;
  idle.reserve(kIdle);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (std::size_t i = 0; i < kIdle; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << "socket() failed after " << i << " connections";
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    if (rc != 0) ::close(fd);
    ASSERT_EQ(rc, 0) << "connect failed after " << i << " connections: " << std::strerror(errno);
    idle.push_back(fd);
  }
  // Wait (bounded) until the proxy has accepted them all (give or take the few descriptors
  // of the warm-up, such as its pooled upstream connection closing meanwhile).
  const auto accepted_all = [&] { return open_fds(proxy.pid()) + 8 >= fds_before + kIdle; };
  for (int i = 0; i < 600 && !accepted_all(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(accepted_all()) << "the proxy holds " << open_fds(proxy.pid()) << " descriptors, "
                              << fds_before << " before the idle connections";

  // Others still get answers while the 10,000 sit there.
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = proxy_get(port, url);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);

  const auto rss_after = rss_kib(proxy.pid());
  const double per_conn_kib = (static_cast<double>(rss_after) - static_cast<double>(rss_before)) / kIdle;
  RecordProperty("rss_before_kib", static_cast<int>(rss_before));
  RecordProperty("rss_after_kib", static_cast<int>(rss_after));
  std::printf("proxy RSS %zu KiB -> %zu KiB with %zu idle connections: %.2f KiB each\n", rss_before, rss_after, kIdle,
              per_conn_kib);
  // An idle connection holds a session and a small read buffer, not a 64 KiB body buffer.
  EXPECT_LT(per_conn_kib, 16.0);

  for (int fd : idle) ::close(fd);
  EXPECT_TRUE(proxy.running()) << proxy.log();
  EXPECT_EQ(proxy_get(port, url).status, 200);
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace
}  // namespace netbox::test
