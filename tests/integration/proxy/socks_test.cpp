// The SOCKS5 listener over real sockets: real curl (--socks5-hostname, socks5h://user:pass@)
// and raw handshakes against an in-process proxy, a real upstream on loopback, and the
// audit rows read back from the SQLite file.
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/curl.hpp"
#include "support/process.hpp"
#include "support/sqlite_query.hpp"

#include "netbox/audit/writer.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace netbox::test {
namespace {

namespace ip = boost::asio::ip;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string connect_name(const std::string& name, std::uint16_t port, int cmd = 1) {
  return bytes({5, cmd, 0, 3, static_cast<int>(name.size())}) + name + bytes({port >> 8, port & 0xff});
}

class SocksTest : public ProxyTest {
 protected:
  void start(const std::string& extra = {}) {
    start_proxy(base_policy(extra));
    socks_port = server->add_listener({ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks).port();
  }
  std::string socks_url(const std::string& userinfo = {}) const {
    return "socks5h://" + userinfo + "127.0.0.1:" + std::to_string(socks_port);
  }
  static RunResult curl(const std::vector<std::string>& args) { return curl_with_status(args); }
  // A no-auth greeting, then `request`; the server's 10-byte reply.
  std::string handshake(ProxyConnection& c, const std::string& request) {
    c.write(bytes({5, 1, 0}));
    EXPECT_EQ(c.read_exactly(2), bytes({5, 0}));
    c.write(request);
    return c.read_exactly(10);
  }
  unsigned short socks_port = 0;
};

TEST_F(SocksTest, CurlSocks5HostnameReachesAnAllowedHostAndLeavesASocksRowWithTheName) {
  start();
  auto r = curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(socks_port), upstream_url("/hello")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"target\":\"/hello\""), std::string::npos) << r.out;
  const auto all = rows();
  ASSERT_EQ(all.size(), 2u) << "the connection, and its one plain-HTTP request";
  const auto& row = all[0];
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.method, "CONNECT");
  EXPECT_EQ(row.host, "upstream.test") << "the name the agent asked for, not only an address";
  EXPECT_EQ(row.port, upstream.port());
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(row.resolved_addr, "127.0.0.1");
  EXPECT_EQ(all[1].kind, "socks");
  EXPECT_EQ(all[1].method, "GET");
  EXPECT_EQ(all[1].path, "/hello");
  EXPECT_GT(all[1].bytes_down, 0);
}

TEST_F(SocksTest, UsernameAndPasswordAreAcceptedWithoutBeingASecret) {
  start();
  auto r = curl({"-x", socks_url("agent-token:anything@"), upstream_url("/hello")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(last_row().kind, "socks");
}

TEST_F(SocksTest, ADeniedHostGetsNotAllowedByRulesetAndADenyRowSayingWhy) {
  start(R"("deny": ["denied.test"])");
  ProxyConnection c(socks_port);
  const auto reply = handshake(c, connect_name("denied.test", 443));
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x02) << "connection not allowed by ruleset";
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  const auto row = last_row();
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.host, "denied.test");
  EXPECT_EQ(row.decision, "deny");
  EXPECT_NE(row.rule, "");
  EXPECT_NE(row.reason, "");

  auto curled = curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(socks_port), "http://denied.test/"});
  EXPECT_NE(curled.exit_code, 0);
  EXPECT_NE(curled.err.find("SOCKS5 connection to denied.test. (2)"), std::string::npos) << curled.err;
}

// What is not HTTP to a host some rule names cannot be checked by them: once the agent's
// first bytes show it (here bytes that are neither TLS nor HTTP), the connection is reset.
TEST_F(SocksTest, ATunnelThatIsNotHttpToAHostSomeRuleNamesIsRefusedRatherThanTunnelledPastTheRules) {
  start(R"("rules": [{"host": "upstream.test", "methods": ["GET"], "paths": ["/ok"], "action": "allow"}])");
  ProxyConnection c(socks_port);
  const auto reply = handshake(c, connect_name("upstream.test", upstream.port()));
  ASSERT_EQ(reply.size(), 10u);
  EXPECT_EQ(reply[1], 0x00) << "what the connection carries is known only once the agent speaks";
  c.write("SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  const auto row = last_row();
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "rules");
  EXPECT_NE(row.reason.find("inspect"), std::string::npos) << row.reason;
  EXPECT_EQ(upstream.requests(), 0u);
}

// Plain HTTP through SOCKS5 runs the proxy's request loop: a row per request under the
// connection's, `rules` on each, and a Host header naming another host refused.
TEST_F(SocksTest, PlainHttpThroughSocksHasOneRowPerRequestAndRulesApplyToEach) {
  start(R"("rules": [{"host": "upstream.test", "methods": ["GET"], "action": "allow"}])");
  const std::string proxy = "127.0.0.1:" + std::to_string(socks_port);
  auto r = curl({"--socks5-hostname", proxy, upstream_url("/one"), upstream_url("/two"), upstream_url("/three")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"target\":\"/three\""), std::string::npos) << r.out;
  auto post = curl({"--socks5-hostname", proxy, "-i", "-d", "x", upstream_url("/post")});
  EXPECT_NE(post.out.find("HTTP/1.1 403"), std::string::npos) << post.out;
  EXPECT_NE(post.out.find("X-Netbox-Reason: "), std::string::npos) << post.out;
  auto other = curl({"--socks5-hostname", proxy, "-i", "-H", "Host: evil.test", upstream_url("/x")});
  EXPECT_NE(other.out.find("the Host header names evil.test"), std::string::npos) << other.out;
  EXPECT_EQ(upstream.requests(), 3u);
  const auto all = rows();
  ASSERT_EQ(all.size(), 8u) << "three connections, five requests";
  EXPECT_EQ(all[0].kind, "socks");
  EXPECT_EQ(all[0].method, "CONNECT");
  for (int i : {1, 2, 3}) {
    EXPECT_EQ(all[i].kind, "socks");
    EXPECT_EQ(all[i].method, "GET");
    EXPECT_EQ(all[i].status, 200);
  }
  EXPECT_EQ(all[3].path, "/three");
  EXPECT_EQ(all[5].method, "POST");
  EXPECT_EQ(all[5].decision, "deny");
  EXPECT_EQ(all[5].rule, "rules");
  EXPECT_EQ(all[7].decision, "deny");
  EXPECT_EQ(all[7].rule, "host");
  EXPECT_EQ(query_column(db_path, "SELECT COUNT(*) FROM requests WHERE parent_id IS NOT NULL"),
            std::vector<std::string>{"5"});
}

TEST_F(SocksTest, AnInternalAddressLiteralIsDeniedBeforeAnyDial) {
  start();
  const auto v6_loopback = bytes({5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80});
  for (const auto& request :
       {bytes({5, 1, 0, 1, 169, 254, 169, 254, 0, 80}), bytes({5, 1, 0, 1, 10, 1, 2, 3, 0, 80}), v6_loopback}) {
    ProxyConnection c(socks_port);
    const auto reply = handshake(c, request);
    ASSERT_EQ(reply.size(), 10u);
    EXPECT_EQ(reply[1], 0x02);
  }
  const auto all = rows();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].host, "169.254.169.254");
  EXPECT_EQ(all[1].host, "10.1.2.3");
  EXPECT_EQ(all[2].host, "::1") << "an IPv6 request is decided as the literal it names";
  for (const auto& row : all) {
    EXPECT_EQ(row.kind, "socks");
    EXPECT_EQ(row.decision, "deny");
    EXPECT_EQ(row.bytes_up, 0);
  }
}

TEST_F(SocksTest, BindAndUdpAssociateAreCommandNotSupported) {
  start();
  for (int cmd : {2, 3}) {
    ProxyConnection c(socks_port);
    const auto reply = handshake(c, connect_name("upstream.test", upstream.port(), cmd));
    ASSERT_EQ(reply.size(), 10u) << cmd;
    EXPECT_EQ(reply[1], 0x07) << cmd;
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  }
  const auto all = rows();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].method, "BIND");
  EXPECT_EQ(all[1].method, "UDP ASSOCIATE");
  for (const auto& row : all) {
    EXPECT_EQ(row.kind, "socks");
    EXPECT_EQ(row.decision, "error");
    EXPECT_NE(row.reason.find("only CONNECT"), std::string::npos) << row.reason;
  }
}

TEST_F(SocksTest, UnknownAddressTypeAndBadVersionAreAnsweredAndClosed) {
  start();
  {
    ProxyConnection c(socks_port);
    EXPECT_EQ(handshake(c, bytes({5, 1, 0, 2, 1, 2, 3, 4, 0, 80}))[1], 0x08);
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  }
  {
    ProxyConnection c(socks_port);
    c.write(bytes({5, 1, 0x80}));  // only a private method
    EXPECT_EQ(c.read_exactly(2), bytes({5, 0xff}));
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  }
  {
    ProxyConnection c(socks_port);
    c.write("GET / HTTP/1.1\r\n\r\n");  // not SOCKS: nothing it could read is answered
    EXPECT_TRUE(c.closed_within(std::chrono::seconds(10)));
  }
}

TEST_F(SocksTest, AClientTricklingItsHandshakeIsClosedAtTheHeaderTimeout) {
  start(R"("limits": {"header_timeout_ms": 300})");
  ProxyConnection c(socks_port);
  c.write(bytes({5, 1, 0}));
  EXPECT_EQ(c.read_exactly(2), bytes({5, 0}));
  c.write(bytes({5, 1, 0, 3, 20, 'a'}));  // a request that never finishes
  EXPECT_TRUE(c.closed_within(std::chrono::seconds(15)));
}

// After "succeeded", the first message is read to learn its protocol; once its first byte
// is in, the whole message has header_timeout_ms, however its bytes are spaced: a byte
// every 150 ms (never a pause of 400) does not hold the connection and its client slot.
TEST_F(SocksTest, AFirstMessageTrickledAByteAtATimeEndsAtTheHeaderTimeoutFromItsFirstByte) {
  start(R"("limits": {"header_timeout_ms": 400})");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(socks_port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  const auto send_all = [&](const std::string& b) {
    return ::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size());
  };
  const auto read_n = [&](std::size_t n) {
    std::string got(n, '\0');
    std::size_t have = 0;
    for (ssize_t r; have < n && (r = ::recv(fd, got.data() + have, n - have, 0)) > 0;) have += static_cast<std::size_t>(r);
    got.resize(have);
    return got;
  };
  ASSERT_TRUE(send_all(bytes({5, 1, 0})));
  ASSERT_EQ(read_n(2), bytes({5, 0}));
  ASSERT_TRUE(send_all(connect_name("upstream.test", upstream.port())));
  ASSERT_EQ(read_n(10).substr(0, 2), bytes({5, 0}));
  ASSERT_TRUE(send_all("GET / HTTP/1.1\r\n"));
  const auto started = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - started < std::chrono::seconds(6)) {
    pollfd p{fd, POLLIN, 0};
    char c;
    closed = ::poll(&p, 1, 150) == 1 && ::recv(fd, &c, 1, 0) <= 0;
    if (!closed) closed = !send_all("x");
  }
  ::close(fd);
  EXPECT_TRUE(closed) << "a head trickled for 6 s was still being read";
}

TEST_F(SocksTest, AnUpstreamThatRefusesIsConnectionRefused) {
  // A port nothing listens on (the upstream's, once it is gone).
  const auto closed = free_port();
  start(R"("ports": [)" + std::to_string(closed) + "]");
  ProxyConnection c(socks_port);
  EXPECT_EQ(handshake(c, connect_name("upstream.test", closed))[1], 0x05);
  const auto row = last_row();
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.decision, "error");
  EXPECT_NE(row.error, "");
}

}  // namespace
}  // namespace netbox::test
