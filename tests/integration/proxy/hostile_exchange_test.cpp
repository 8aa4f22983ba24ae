// Hostile exchanges: what a request body, a reused upstream connection and an upstream's
// response head can do to the proxy, to other agents and to the audit trail. Denied
// uploads are refused unread and the proxy's memory stays flat under many 60 MiB
// bodies; "Expect: 100-continue" is answered only once admitted; a POST is never sent
// twice; a GET body an upstream ignores never answers another agent; an upstream cannot
// forge X-Netbox-* headers, drop a transfer coding's name or double a Content-Length.
#include "proxy_fixture.hpp"
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/raw_upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

std::string policy_for(unsigned short upstream_port) {
  return R"({"version": 1, "allow": ["hostile.test"], "ports": [)" + std::to_string(upstream_port) +
         R"(], "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"hostile.test": ["127.0.0.1"],
         "denied.test": ["127.0.0.1"]}})";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::size_t count_of(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// A blocking connection to the proxy from a chosen loopback source address (another
// address is another client, as another agent's veth would be).
std::string target(unsigned short upstream_port, const std::string& path, const std::string& host = "hostile.test") {
  return "http://" + host + ":" + std::to_string(upstream_port) + path;
}

class Client {
 public:
  explicit Client(unsigned short port, const char* source = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &src.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) ADD_FAILURE() << "bind " << source;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ADD_FAILURE() << "connect failed";
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  int fd() const { return fd_; }
  bool send(std::string_view s) { return send_all(fd_, s); }

  // The next response head (through the blank line), "" if the connection ended first.
  std::string head() {
    while (pending_.find("\r\n\r\n") == std::string::npos)
      if (!fill()) return {};
    const auto end = pending_.find("\r\n\r\n") + 4;
    auto h = pending_.substr(0, end);
    pending_.erase(0, end);
    return h;
  }
  // `n` body bytes after a head.
  std::string body(std::size_t n) {
    while (pending_.size() < n)
      if (!fill()) break;
    auto b = pending_.substr(0, std::min(n, pending_.size()));
    pending_.erase(0, b.size());
    return b;
  }
  // Everything up to the proxy's close.
  std::string rest() {
    while (fill()) {
    }
    return std::exchange(pending_, {});
  }
  // A response with a Content-Length body: head and body.
  std::pair<std::string, std::string> response() {
    auto h = head();
    const auto at = lower(h).find("content-length: ");
    const std::size_t n = at == std::string::npos ? 0 : std::stoul(h.substr(at + 16));
    return {h, body(n)};
  }
  // True if the proxy closes (EOF or reset) within the receive timeout, dropping bytes.
  bool closed() {
    char buf[65536];
    for (;;) {
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  bool fill() {
    char buf[65536];
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::string pending_;
};

// Reads `n` body bytes on an upstream connection (after read_head left some in `pending`).
std::string read_body(int fd, std::string& pending, std::size_t n) {
  char buf[65536];
  while (pending.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) <= 0) break;
    const auto got = ::recv(fd, buf, sizeof buf, 0);
    if (got <= 0) break;
    pending.append(buf, static_cast<std::size_t>(got));
  }
  auto b = pending.substr(0, std::min(n, pending.size()));
  pending.erase(0, b.size());
  return b;
}

std::size_t content_length(const std::string& head) {
  const auto at = lower(head).find("content-length: ");
  return at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
}

std::string ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The body of a chunked message (extensions and trailers are not used here).
std::string dechunk(std::string chunked) {
  std::string out;
  for (;;) {
    const auto eol = chunked.find("\r\n");
    if (eol == std::string::npos) return out + "<unterminated>";
    const auto size = std::stoul(chunked.substr(0, eol), nullptr, 16);
    if (size == 0) return out;
    out += chunked.substr(eol + 2, size);
    chunked.erase(0, eol + 2 + size + 2);
  }
}

class HostileExchange : public ProxyTest {};

// --- item 12: bodies before and after the decision, through a proxy process ----------

// Agents announce 60 MiB bodies to a denied host and to an allowed one, and push them as
// fast as the proxy takes them. The denied ones get their 403 without the proxy reading
// their bodies (they cannot push more than the socket buffers hold before it comes, and
// the connection then ends); the allowed ones arrive byte-exact upstream; and the
// proxy's memory stays flat throughout, as it holds one piece per connection at a time.
TEST(HostileExchangeProcess, BigBodiesAreRefusedUnreadOrStreamedWithFlatMemory) {
  constexpr std::size_t kBody = 60u << 20;
  constexpr int kDenied = 6;
  constexpr int kAllowed = 4;
  const std::string body = pattern_bytes(kBody);
  std::atomic<int> exact{0};
  RawUpstream sink([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    const auto head = self.read_head(fd, pending);
    if (head.empty()) return;
    const auto n = content_length(head);
    std::size_t at = 0;
    bool same = n == kBody;
    char buf[65536];
    while (same && at < n) {
      if (pending.empty()) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20000) <= 0) break;
        const auto got = ::recv(fd, buf, sizeof buf, 0);
        if (got <= 0) break;
        pending.assign(buf, static_cast<std::size_t>(got));
      }
      const auto take = std::min(pending.size(), n - at);
      same = body.compare(at, take, pending, 0, take) == 0;
      at += take;
      pending.erase(0, take);
    }
    same = same && at == n;
    if (same) ++exact;
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n" +
                     std::string(same ? "exact" : "wrong"));
  });
  TempDir dir;
  const auto policy = dir.write("policy.json", policy_for(sink.port()));
  const auto port = free_port();
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db"), dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  ASSERT_EQ(proxy_get(port, target(sink.port(), "/warm", "denied.test")).status, 403);
  const auto rss_before = rss_kib(proxy.pid());
  ASSERT_GT(rss_before, 0U);

  std::atomic<bool> done{false};
  std::atomic<std::size_t> rss_peak{rss_before};
  std::thread sampler([&] {
    while (!done) {
      rss_peak = std::max(rss_peak.load(), rss_kib(proxy.pid()));
      std::this_thread::sleep_for(10ms);
    }
  });

  struct Denied {
    std::size_t sent = 0;
    std::string answer;
    bool closed = false;
  };
  std::vector<Denied> denied(kDenied);
  std::vector<std::string> allowed(kAllowed);
  std::vector<std::thread> agents;
  for (int i = 0; i < kDenied; ++i) {
    agents.emplace_back([&, i] {
      Client c(port);
      auto& d = denied[static_cast<std::size_t>(i)];
      c.send("POST " + target(sink.port(), "/upload", "denied.test") +
             " HTTP/1.1\r\nHost: denied.test\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n");
      // Push the body while watching for an answer; stop pushing once it comes.
      while (d.sent < kBody) {
        pollfd p{c.fd(), POLLIN | POLLOUT, 0};
        if (::poll(&p, 1, 20000) <= 0) break;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) break;
        const auto n = ::send(c.fd(), body.data() + d.sent, std::min<std::size_t>(64 * 1024, kBody - d.sent),
                              MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
        if (n > 0) d.sent += static_cast<std::size_t>(n);
      }
      d.answer = c.head();
      d.closed = c.closed();
    });
  }
  for (int i = 0; i < kAllowed; ++i) {
    agents.emplace_back([&, i] {
      Client c(port);
      c.send("POST " + target(sink.port(), "/upload") + " HTTP/1.1\r\nHost: hostile.test\r\nContent-Length: " +
             std::to_string(kBody) + "\r\n\r\n");
      c.send(body);
      auto [h, b] = c.response();
      allowed[static_cast<std::size_t>(i)] = h.substr(0, h.find("\r\n")) + " " + b;
    });
  }
  for (auto& t : agents) t.join();
  done = true;
  sampler.join();

  for (const auto& d : denied) {
    EXPECT_EQ(d.answer.rfind("HTTP/1.1 403", 0), 0U) << d.answer;
    EXPECT_NE(lower(d.answer).find("connection: close"), std::string::npos) << d.answer;
    EXPECT_TRUE(d.closed) << "the proxy kept a refused upload's connection open";
    EXPECT_LT(d.sent, kBody / 2) << "the proxy read a denied request's body before refusing it";
  }
  for (const auto& a : allowed) EXPECT_EQ(a, "HTTP/1.1 200 OK exact");
  EXPECT_EQ(exact.load(), kAllowed);
  const auto growth_kib = rss_peak.load() - rss_before;
  std::printf("proxy RSS %zu KiB, peak %zu KiB, with %d denied and %d allowed 60 MiB uploads\n", rss_before,
              rss_peak.load(), kDenied, kAllowed);
  EXPECT_LT(growth_kib, 100u * 1024) << "the proxy's memory grew with the bodies";
  EXPECT_TRUE(proxy.running()) << proxy.log();
}

// --- item 20: Expect: 100-continue --------------------------------------------------

// The 100 is an invitation to send the body: a denied request never gets one (its 403
// comes first, and the connection ends), an admitted one gets it and its body arrives.
TEST_F(HostileExchange, ExpectContinueIsAnsweredOnlyOnceTheRequestIsAdmitted) {
  start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "denied.test": ["127.0.0.1"]})"));
  {
    Client c(port);
    c.send("POST http://denied.test:" + std::to_string(upstream.port()) +
           "/body HTTP/1.1\r\nHost: denied.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    const auto h = c.head();
    EXPECT_EQ(h.rfind("HTTP/1.1 403", 0), 0U) << h;
    EXPECT_TRUE(c.closed());
  }
  const auto before = upstream.requests();
  Client c(port);
  c.send("POST " + upstream_url("/body") +
         " HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.head(), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("hello");
  auto [h, b] = c.response();
  EXPECT_EQ(h.rfind("HTTP/1.1 200", 0), 0U) << h;
  EXPECT_EQ(b, "hello");
  EXPECT_EQ(upstream.requests(), before + 1);
  const auto all = rows();
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0].status, 403);
  EXPECT_EQ(all[0].bytes_up, 0);
  EXPECT_EQ(all[1].status, 200);
  EXPECT_GT(all[1].bytes_up, 5);  // the body and the forwarded head
  EXPECT_LT(all[1].bytes_up, 5 + 256);
}

// An admitted upload breaks off in the middle (a malformed chunk after a good one): the
// upstream, which has the head and the first piece, sees its connection reset rather than
// a clean end it might take for a whole request; the agent gets 400 and the row the bytes
// that went up.
TEST_F(HostileExchange, AnUploadThatBreaksOffResetsTheUpstream) {
  std::atomic<bool> got_head{false};
  std::atomic<int> end_errno{-1};
  std::string received;
  RawUpstream sink([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    got_head = true;
    char buf[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20000) <= 0) return;
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        const int e = n == 0 ? 0 : errno;
        received = pending;  // before end_errno, which the test waits for
        end_errno = e;
        return;
      }
      pending.append(buf, static_cast<std::size_t>(n));
    }
  });
  // The secret rule holds a body's first 64 KiB back until it has read them: off here, so
  // that the head and the first piece go up before the break.
  auto policy = policy_for(sink.port());
  policy.insert(policy.rfind('}'), R"(, "guardian": {"content": {"secrets": "off"}})");
  start_proxy(policy);
  Client c(port);
  c.send("POST " + target(sink.port(), "/upload") +
         " HTTP/1.1\r\nHost: hostile.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  for (int i = 0; i < 400 && !got_head; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(got_head);
  c.send("zz\r\nbroken\r\n0\r\n\r\n");
  const auto h = c.head();
  EXPECT_EQ(h.rfind("HTTP/1.1 400", 0), 0U) << h;
  EXPECT_NE(h.find("chunked request body is malformed"), std::string::npos) << h;
  EXPECT_TRUE(c.closed());
  for (int i = 0; i < 400 && end_errno < 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(end_errno.load(), ECONNRESET) << "the upstream saw a clean end of a request cut short";
  EXPECT_EQ(received, "5\r\nhello\r\n");
  const auto row = last_row();
  EXPECT_EQ(row.status, 400);
  EXPECT_EQ(row.decision, "error");  // admitted, then the agent's body broke off
  EXPECT_GT(row.bytes_up, 5);  // the head and the first piece
  EXPECT_LT(row.bytes_up, 5 + 256);
}

// --- item 15: no replayed POST -------------------------------------------------------

// A pooled connection's upstream reads a POST and closes without answering: the POST may
// have taken effect, so it is not sent again; the agent gets a 502 saying so, and the
// row has the body's bytes once.
TEST_F(HostileExchange, PostOnAReusedConnectionThatClosesIsNotSentAgain) {
  std::atomic<int> posts{0};
  RawUpstream pay([&](RawUpstream& self, int fd, std::size_t index) {
    std::string pending;
    for (std::string head; !(head = self.read_head(fd, pending)).empty();) {
      if (head.rfind("POST", 0) == 0) {
        ++posts;
        read_body(fd, pending, content_length(head));
        if (index == 0) return;  // closes without answering
      }
      if (!send_all(fd, ok("paid"))) return;
    }
  });
  start_proxy(policy_for(pay.port()), {}, 1);  // one io thread: one upstream pool
  {
    Client warm(port);
    warm.send("GET " + target(pay.port(), "/warm") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
    EXPECT_EQ(warm.response().second, "paid");
  }
  Client c(port);
  const std::string payment = "amount=100&to=attacker";
  c.send("POST " + target(pay.port(), "/pay") + " HTTP/1.1\r\nHost: hostile.test\r\nContent-Length: " +
         std::to_string(payment.size()) + "\r\n\r\n" + payment);
  auto [h, b] = c.response();
  EXPECT_EQ(h.rfind("HTTP/1.1 502", 0), 0U) << h << b;
  EXPECT_NE(h.find("was not sent again"), std::string::npos) << h;
  EXPECT_EQ(posts.load(), 1) << "the POST reached the upstream more than once";
  EXPECT_EQ(pay.connections(), 1U);
  const auto row = last_row();
  EXPECT_EQ(row.method, "POST");
  EXPECT_EQ(row.status, 502);
  // The body and its head, once: never counted again for a second send.
  EXPECT_GT(row.bytes_up, static_cast<std::int64_t>(payment.size()));
  EXPECT_LT(row.bytes_up, static_cast<std::int64_t>(payment.size() + 128));
  EXPECT_NE(row.error.find("closed before answering"), std::string::npos) << row.error;
}

// The same for a GET: idempotent, so it is sent again on a fresh connection.
TEST_F(HostileExchange, GetOnAReusedConnectionThatClosesIsSentAgain) {
  RawUpstream flaky([&](RawUpstream& self, int fd, std::size_t index) {
    std::string pending;
    for (int k = 0; !self.read_head(fd, pending).empty(); ++k) {
      if (index == 0 && k == 1) return;
      if (!send_all(fd, ok("fine"))) return;
    }
  });
  start_proxy(policy_for(flaky.port()), {}, 1);
  Client c(port);
  c.send("GET " + target(flaky.port(), "/1") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
  EXPECT_EQ(c.response().second, "fine");
  Client c2(port);
  c2.send("GET " + target(flaky.port(), "/2") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
  auto [h, b] = c2.response();
  EXPECT_EQ(h.rfind("HTTP/1.1 200", 0), 0U) << h;
  EXPECT_EQ(b, "fine");
  EXPECT_EQ(flaky.connections(), 2U);
  EXPECT_EQ(flaky.requests(), 3U);
}

// --- item 17: the pool -------------------------------------------------------------

// The upstream ignores GET bodies, so agent A's body carries a second request, whose
// answer the upstream holds back until the connection's next request comes. Agent B
// (another address) must get its own answer, never the one to A's smuggled request.
TEST_F(HostileExchange, AGetBodyTheUpstreamIgnoresNeverAnswersAnotherAgent) {
  RawUpstream ignoring([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    for (std::string head; !(head = self.read_head(fd, pending)).empty();) {
      if (head.rfind("GET /smuggled", 0) == 0) {
        const auto next = self.read_head(fd, pending, 5s);
        if (!send_all(fd, ok("POISON")) || next.empty()) return;
        head = next;
      }
      const auto path = head.substr(4, head.find(' ', 4) - 4);
      if (!send_all(fd, ok("answer to " + path))) return;
    }
  });
  start_proxy(policy_for(ignoring.port()), {}, 1);
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: hostile.test\r\n\r\n";
  {
    Client a(port, "127.0.0.1");
    a.send("GET " + target(ignoring.port(), "/a") + " HTTP/1.1\r\nHost: hostile.test\r\nContent-Length: " +
           std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled);
    EXPECT_EQ(a.response().second, "answer to /a");
  }
  Client b(port, "127.0.0.2");
  b.send("GET " + target(ignoring.port(), "/b") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
  EXPECT_EQ(b.response().second, "answer to /b");
  // The same agent is not served the smuggled answer either.
  Client a2(port, "127.0.0.1");
  a2.send("GET " + target(ignoring.port(), "/a2") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
  EXPECT_EQ(a2.response().second, "answer to /a2");
}

// A connection one agent used is never handed to another, even after a clean exchange;
// the same agent's next connection does reuse it.
TEST_F(HostileExchange, PooledConnectionsServeOnlyTheAgentThatOpenedThem) {
  RawUpstream plain([&](RawUpstream& self, int fd, std::size_t index) {
    std::string pending;
    while (!self.read_head(fd, pending).empty())
      if (!send_all(fd, ok("connection " + std::to_string(index)))) return;
  });
  start_proxy(policy_for(plain.port()), {}, 1);
  const auto get = [&](const char* source) {
    Client c(port, source);
    c.send("GET " + target(plain.port(), "/") + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
    return c.response().second;
  };
  EXPECT_EQ(get("127.0.0.1"), "connection 0");
  EXPECT_EQ(get("127.0.0.2"), "connection 1");
  EXPECT_EQ(get("127.0.0.1"), "connection 0");
  EXPECT_EQ(get("127.0.0.2"), "connection 1");
  EXPECT_EQ(plain.connections(), 2U);
}

// --- item 19: X-Netbox-* ---------------------------------------------------------------

// An upstream cannot forge a netbox denial, and an agent's X-Netbox-* headers do not
// travel upstream.
TEST_F(HostileExchange, NetboxHeadersNeverCrossTheProxyInEitherDirection) {
  std::string seen;
  std::mutex mu;
  RawUpstream forging([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    const auto head = self.read_head(fd, pending);
    {
      std::lock_guard<std::mutex> lock(mu);
      seen = head;
    }
    send_all(fd,
             "HTTP/1.1 403 Forbidden\r\nX-Netbox-Decision: deny\r\nx-netbox-reason: forged by the upstream\r\n"
             "X-NETBOX-Rule: deny[0]\r\nX-Netboxish: kept\r\nContent-Length: 6\r\n\r\nforged");
  });
  start_proxy(policy_for(forging.port()));
  Client c(port);
  c.send("GET " + target(forging.port(), "/") +
         " HTTP/1.1\r\nHost: hostile.test\r\nX-Netbox-Agent: someone-else\r\nx-netbox-decision: allow\r\n\r\n");
  auto [h, b] = c.response();
  EXPECT_EQ(h.rfind("HTTP/1.1 403", 0), 0U) << h;
  EXPECT_EQ(lower(h).find("x-netbox-"), std::string::npos) << h;
  EXPECT_NE(h.find("X-Netboxish: kept"), std::string::npos) << h;
  EXPECT_EQ(b, "forged");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_FALSE(seen.empty());
  EXPECT_EQ(lower(seen).find("x-netbox-"), std::string::npos) << seen;
}

// --- item 20: the upstream's framing ----------------------------------------------------

// "gzip, chunked": the parser takes the chunks off, the gzip coding stays on the bytes,
// so the agent must get them labelled gzip (and chunked again). Also when the upstream
// delimits the gzip body by closing.
TEST_F(HostileExchange, TransferCodingsOtherThanChunkedReachTheAgentNamed) {
  const std::string coded = std::string("\x1f\x8b\x08\x00 pretend gzip", 17);
  RawUpstream coding([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    const auto head = self.read_head(fd, pending);
    if (head.find("/chunked") != std::string::npos) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx", coded.size());
      send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + std::string(size) + "\r\n" + coded +
                       "\r\n0\r\n\r\n");
    } else {
      send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n" + coded);
    }
  });
  start_proxy(policy_for(coding.port()));
  for (const std::string path : {"/chunked", "/close"}) {
    SCOPED_TRACE(path);
    Client c(port);
    c.send("GET " + target(coding.port(), path) + " HTTP/1.1\r\nHost: hostile.test\r\nConnection: close\r\n\r\n");
    const auto h = c.head();
    EXPECT_NE(h.find("\r\nTransfer-Encoding: gzip, chunked\r\n"), std::string::npos) << h;
    EXPECT_EQ(count_of(lower(h), "transfer-encoding"), 1U) << h;
    EXPECT_EQ(dechunk(c.rest()), coded);
  }
  // HTTP/1.0 has no transfer codings to carry gzip in: refused, not mislabelled.
  Client c(port);
  c.send("GET " + target(coding.port(), "/chunked") + " HTTP/1.0\r\nHost: hostile.test\r\n\r\n");
  const auto h = c.head();
  EXPECT_EQ(h.rfind("HTTP/1.0 502", 0), 0U) << h;
  EXPECT_NE(h.find("transfer coding 'gzip'"), std::string::npos) << h;
}

// Two equal Content-Length lines (or one "2, 2"), which the parser accepts: the agent
// gets exactly one.
TEST_F(HostileExchange, AnUpstreamsRepeatedContentLengthReachesTheAgentOnce) {
  RawUpstream doubling([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    for (std::string head; !(head = self.read_head(fd, pending)).empty();) {
      const std::string lengths =
          head.find("/list") != std::string::npos ? "Content-Length: 2, 2\r\n" : "Content-Length: 2\r\nContent-Length: 2\r\n";
      if (!send_all(fd, "HTTP/1.1 200 OK\r\n" + lengths + "\r\nok")) return;
    }
  });
  start_proxy(policy_for(doubling.port()));
  for (const std::string path : {"/lines", "/list"}) {
    SCOPED_TRACE(path);
    Client c(port);
    c.send("GET " + target(doubling.port(), path) + " HTTP/1.1\r\nHost: hostile.test\r\n\r\n");
    const auto h = c.head();
    if (h.rfind("HTTP/1.1 502", 0) == 0) continue;  // refusing it is as good
    EXPECT_EQ(count_of(lower(h), "content-length"), 1U) << h;
    EXPECT_NE(h.find("\r\nContent-Length: 2\r\n"), std::string::npos) << h;
    EXPECT_EQ(c.body(2), "ok");
  }
}

}  // namespace
}  // namespace netbox::test
