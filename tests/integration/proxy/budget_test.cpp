// Budgets and rates enforced (issue 25): an upload past limits.bytes_up, through a CONNECT
// tunnel and as a plain HTTP body, is cut at the budget (within one relay piece, 64 KiB),
// its row says so (decision `budget`, the budget named), and the agent's next request is
// refused 403 naming the budget; a download past bytes_down likewise; requests_per_minute
// answers 429 with Retry-After once the burst is spent. The agent here is a hostile client
// that simply keeps sending; the upstream is a sink that counts what reached it.
#include "agent_tls.hpp"
#include "credentials_fixture.hpp"
#include "proxy_fixture.hpp"

#include "support/raw_upstream.hpp"

#include <signal.h>
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

// An agent that carries its data in request headers instead of a body (64 KiB of fields
// a request, no body at all) is charged for them as for a body: the head as forwarded
// counts against limits.bytes_up and in the row's bytes_up, which is exactly what the
// upstream received.
TEST_F(BudgetTest, RequestHeadersCountAgainstBytesUpAndInTheRow) {
  std::atomic<std::uint64_t> received{0};
  RawUpstream counting([&](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    for (std::string head; !(head = self.read_head(fd, pending)).empty();) {
      received += head.size();
      if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) return;
    }
  });
  constexpr std::size_t kField = 6000;
  start_proxy(base_policy(R"("allow": ["upstream.test", "sink.test"], "ports": [)" + std::to_string(upstream.port()) +
                          ", " + std::to_string(counting.port()) +
                          R"(], "resolve": {"upstream.test": ["127.0.0.1"], "sink.test": ["127.0.0.1"]},
                             "limits": {"bytes_up": "16k"})"));
  const std::string authority = "sink.test:" + std::to_string(counting.port());
  const std::string request = "GET http://" + authority + "/q HTTP/1.1\r\nHost: " + authority + "\r\nX-Data: " +
                              std::string(kField, 'd') + "\r\n\r\n";
  ProxyConnection conn(port);
  std::vector<int> statuses;
  for (int i = 0; i < 5; ++i) {
    const auto r = conn.send(request);
    statuses.push_back(r.status);
    if (r.status != 200) {
      EXPECT_EQ(r.status, 403);
      EXPECT_EQ(r.header("x-netbox-decision"), "budget");
      EXPECT_NE(r.header("x-netbox-reason").find("limits.bytes_up"), std::string::npos) << r.header("x-netbox-reason");
      break;
    }
  }
  // 16 KiB holds two of these heads, not a third.
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 403}));
  const auto all = rows();
  ASSERT_EQ(all.size(), 3U);
  EXPECT_GT(all[0].bytes_up, static_cast<std::int64_t>(kField));
  EXPECT_EQ(static_cast<std::uint64_t>(all[0].bytes_up + all[1].bytes_up), received.load())
      << "the rows count other than what reached the upstream";
  EXPECT_EQ(all[2].decision, "budget");
  EXPECT_EQ(all[2].rule, "limits.bytes_up");
  EXPECT_EQ(all[2].bytes_up, 0);  // nothing of it went
}

// A SOCKS5 tunnel is charged as a CONNECT one is: cut at the budget, its row `budget`.
TEST_F(BudgetTest, Socks5TunnelUploadIsCutAtBytesUp) {
  start(R"("bytes_up": ")" + std::to_string(kBudget) + R"(")");
  const auto socks = server->add_listener({boost::asio::ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks).port();
  {
    ProxyConnection conn(socks);
    conn.write(std::string("\x05\x01\x00", 3));
    ASSERT_EQ(conn.read_exactly(2), std::string("\x05\x00", 2));
    const std::string name = "sink.test";
    conn.write(std::string("\x05\x01\x00\x03", 4) + static_cast<char>(name.size()) + name +
               static_cast<char>(sink.port() >> 8) + static_cast<char>(sink.port() & 0xff));
    const auto reply = conn.read_exactly(10);
    ASSERT_EQ(reply[1], 0) << "the SOCKS5 connect was refused";
    flood(conn, 8 * kBudget);
    EXPECT_TRUE(conn.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().kind, "socks");
  expect_cut_row(all.front(), "limits.bytes_up", all.front().bytes_up);
  EXPECT_LE(sink.received(), kBudget + kPiece);
  expect_next_refused("limits.bytes_up");
}

// Inside an inspected tunnel each request is relayed by netbox: its body is charged to
// the budget as it goes, cut there, and the inner request's row says `budget`.
class InspectedBudgetTest : public CredentialsFixture {};

TEST_F(InspectedBudgetTest, AnInspectedRequestBodyIsCutAtBytesUp) {
  // The agent writes on after the cut: a write to the closed socket must fail, not kill the test.
  ::signal(SIGPIPE, SIG_IGN);
  auto j = nlohmann::json::parse(base_policy());
  j["allow"] = {"upstream.test"};
  j["ports"] = {tls_upstream.port()};
  j["inspect"] = {"upstream.test"};
  j["limits"] = {{"bytes_up", std::to_string(kBudget)}};
  start_proxy(j.dump());
  const std::string authority = "upstream.test:" + std::to_string(tls_upstream.port());
  {
    AgentTls tls(port, authority);
    ASSERT_TRUE(tls.connected());
    const std::uint64_t length = 8 * kBudget;
    tls.send("POST /upload HTTP/1.1\r\nHost: " + authority + "\r\nContent-Length: " + std::to_string(length) +
             "\r\n\r\n");
    const std::string chunk(kPiece, 'x');
    for (std::uint64_t sent = 0; sent < length; sent += chunk.size()) tls.send(chunk);  // stops taking at the cut
  }
  bool cut = false;
  std::string seen;
  for (const auto& r : rows()) {
    seen += r.kind + " " + r.method + " " + r.decision + " " + r.rule + " " + std::to_string(r.bytes_up) + " " + r.error + "\n";
    if (r.decision != "budget") continue;
    cut = true;
    EXPECT_EQ(r.rule, "limits.bytes_up");
    EXPECT_EQ(r.method, "POST");
    EXPECT_GE(r.bytes_up, static_cast<std::int64_t>(kBudget - kPiece));
    EXPECT_LE(r.bytes_up, static_cast<std::int64_t>(kBudget + kPiece));
  }
  EXPECT_TRUE(cut) << "no row was cut at the budget:\n" << seen;
  const auto next = proxy_connect(port, authority);  // the budget is spent: no new tunnel either
  EXPECT_EQ(next.status, 403);
  EXPECT_EQ(next.header("x-netbox-decision"), "budget");
}

// limits.new_hosts_per_minute: hosts not asked for before in this launch take a token;
// a host already let through does not, so an agent working with its hosts is never slowed
// while one fanning out to fresh names (a scan, a subdomain exfiltration) is.
TEST_F(BudgetTest, NewHostsPerMinuteAnswers429ForTheNextNewHostOnly) {
  auto authority = [this](const std::string& host) { return "http://" + host + ":" + std::to_string(upstream.port()); };
  start_proxy(base_policy(R"("allow": ["a.test", "b.test", "c.test"],
                               "resolve": {"a.test": ["127.0.0.1"], "b.test": ["127.0.0.1"], "c.test": ["127.0.0.1"]},
                               "limits": {"new_hosts_per_minute": 2})"));
  EXPECT_EQ(proxy_get(port, authority("a.test") + "/echo").status, 200);
  EXPECT_EQ(proxy_get(port, authority("a.test") + "/echo").status, 200);  // not new: no token
  EXPECT_EQ(proxy_get(port, authority("b.test") + "/echo").status, 200);
  const auto over = proxy_get(port, authority("c.test") + "/echo");
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.header("x-netbox-decision"), "cap");
  EXPECT_NE(over.header("x-netbox-reason").find("limits.new_hosts_per_minute"), std::string::npos);
  const int after = std::stoi(over.header("retry-after").empty() ? "0" : over.header("retry-after"));
  EXPECT_GE(after, 1);
  EXPECT_LE(after, 30);  // a token every 30 s
  EXPECT_EQ(last_row().rule, "limits.new_hosts_per_minute");
  for (const std::string known : {"a.test", "b.test"})
    EXPECT_EQ(proxy_get(port, authority(known) + "/echo").status, 200) << known;
}

// Sends `total` bytes on each connection, then closes.
class Source {
 public:
  explicit Source(std::uint64_t total)
      : server_([total](RawUpstream&, int fd, std::size_t) {
          const std::string chunk(kPiece, 'y');
          for (std::uint64_t sent = 0; sent < total; sent += chunk.size())
            if (!send_all(fd, chunk)) return;
        }) {}
  unsigned short port() const { return server_.port(); }

 private:
  RawUpstream server_;
};

constexpr std::uint64_t kShaped = 4 * 1024 * 1024;  // 4 MiB at 1 MiB/s, a bucket of 1 MiB: 3 s

// limits.bandwidth_up of 1 MiB/s through a CONNECT tunnel: the upload is slowed, none of it
// dropped. The bound is generous and one-sided (at least 2 s for what takes about 3):
// without shaping it takes a few milliseconds on loopback.
TEST_F(BudgetTest, BandwidthUpShapesAConnectTunnelUploadWithoutDroppingAByte) {
  start(R"("bandwidth_up": "1M")");
  ProxyConnection conn(port);
  ASSERT_EQ(conn.send("CONNECT " + sink_authority() + " HTTP/1.1\r\n\r\n", true).status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread writer([&] { flood(conn, kShaped); });
  for (int i = 0; i < 3000 && sink.received() < kShaped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto took = std::chrono::steady_clock::now() - t0;
  writer.join();
  EXPECT_EQ(sink.received(), kShaped);  // paced, never dropped
  EXPECT_GE(took, std::chrono::seconds(2));
}

TEST_F(BudgetTest, BandwidthDownShapesAConnectTunnelDownloadWithoutDroppingAByte) {
  Source source(kShaped);
  start_proxy(base_policy(R"("allow": ["source.test"], "ports": [)" + std::to_string(source.port()) +
                          R"(], "resolve": {"source.test": ["127.0.0.1"]}, "limits": {"bandwidth_down": "1M"})"));
  ProxyConnection conn(port, std::chrono::seconds(30));
  ASSERT_EQ(conn.send("CONNECT source.test:" + std::to_string(source.port()) + " HTTP/1.1\r\n\r\n", true).status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = conn.read_exactly(kShaped);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(got.size(), kShaped);
  EXPECT_GE(took, std::chrono::seconds(2));
}

// The same buckets shape plain HTTP bodies (issue 25): a POST body relayed by the request
// loop at bandwidth_up, an answer at bandwidth_down. One-sided bounds again: 4 MiB at
// 1 MiB/s with a bucket of 1 MiB takes about 3 s; unshaped, milliseconds.
TEST_F(BudgetTest, BandwidthUpShapesAPlainHttpBodyWithoutDroppingAByte) {
  start(R"("bandwidth_up": "1M")");
  ProxyConnection conn(port);
  conn.write("POST http://" + sink_authority() + "/upload HTTP/1.1\r\nHost: " + sink_authority() +
             "\r\nContent-Length: " + std::to_string(kShaped) + "\r\n\r\n");
  const auto t0 = std::chrono::steady_clock::now();
  std::thread writer([&] { flood(conn, kShaped); });
  // The sink gets the forwarded head, then the body: all of it is there once it has kShaped.
  for (int i = 0; i < 3000 && sink.received() < kShaped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto took = std::chrono::steady_clock::now() - t0;
  writer.join();
  EXPECT_GE(sink.received(), kShaped);  // paced, never dropped
  EXPECT_GE(took, std::chrono::seconds(2));
}

TEST_F(BudgetTest, BandwidthDownShapesAPlainHttpAnswerWithoutDroppingAByte) {
  start(R"("bandwidth_down": "1M")");
  const auto t0 = std::chrono::steady_clock::now();
  const auto big = proxy_get(port, upstream_url("/big?n=" + std::to_string(kShaped)));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(big.status, 200);
  EXPECT_EQ(big.body.size(), kShaped);
  EXPECT_GE(took, std::chrono::seconds(2));
}

// The pauses of limits.bandwidth_* are netbox's, not the agent's or the upstream's silence:
// with each 64 KiB piece earning a pause of half a second (128 KiB/s) and
// idle_timeout_ms at 250, every pause is longer than the idle limit, and the transfer still
// completes whole: the idle clock stands still while a pause is under way. A tunnel (its
// own idle timer) and a plain HTTP answer (the streams' timers, armed per read and write).
constexpr std::uint64_t kPausedPast = 384 * 1024;  // a 128 KiB bucket, then 2 s of pauses
constexpr const char* kShortIdle = R"("bandwidth_down": "128K", "idle_timeout_ms": 250)";

TEST_F(BudgetTest, PacingPausesLongerThanTheIdleLimitDoNotCutAConnectTunnel) {
  Source source(kPausedPast);
  start_proxy(base_policy(R"("allow": ["source.test"], "ports": [)" + std::to_string(source.port()) +
                          R"(], "resolve": {"source.test": ["127.0.0.1"]}, "limits": {)" + kShortIdle + "}"));
  ProxyConnection conn(port, std::chrono::seconds(30));
  ASSERT_EQ(conn.send("CONNECT source.test:" + std::to_string(source.port()) + " HTTP/1.1\r\n\r\n", true).status, 200);
  EXPECT_EQ(conn.read_exactly(kPausedPast).size(), kPausedPast) << "cut during a pause";
}

TEST_F(BudgetTest, PacingPausesLongerThanTheIdleLimitDoNotCutAPlainHttpAnswer) {
  start(kShortIdle);
  const auto big = proxy_get(port, upstream_url("/big?n=" + std::to_string(kPausedPast)));
  EXPECT_EQ(big.status, 200);
  EXPECT_EQ(big.body.size(), kPausedPast);
  EXPECT_EQ(last_row().error, "");
}

// An inspected host's answer is relayed by the same loop over the agent's TLS: shaped too.
TEST_F(InspectedBudgetTest, BandwidthDownShapesAnInspectedAnswer) {
  tls_upstream.script([](const std::string&, const TlsUpstreamServer::Send& send) {
    const std::string chunk(kPiece, 'z');
    if (!send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kShaped + 4) + "\r\n\r\n")) return;
    for (std::uint64_t sent = 0; sent < kShaped; sent += chunk.size())
      if (!send(chunk)) return;
    send("END!");
  });
  auto j = nlohmann::json::parse(base_policy());
  j["allow"] = {"upstream.test"};
  j["ports"] = {tls_upstream.port()};
  j["inspect"] = {"upstream.test"};
  j["limits"] = {{"bandwidth_down", "1M"}};
  start_proxy(j.dump());
  const std::string authority = "upstream.test:" + std::to_string(tls_upstream.port());
  AgentTls tls(port, authority);
  ASSERT_TRUE(tls.connected());
  const auto t0 = std::chrono::steady_clock::now();
  tls.send("GET /big HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
  const auto got = tls.read_until("END!");
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(got.size(), kShaped + 4);
  EXPECT_EQ(got.substr(got.size() - 4), "END!");
  EXPECT_GE(took, std::chrono::seconds(2));
}

}  // namespace
}  // namespace netbox::test
