// Transparent capture in a real launch (issue 15 item 2): programs that ignore the proxy
// variables connect to the names the DNS view answered, and the proxy decides and records
// each connection (kind `transparent`) exactly as it decides a CONNECT.
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_upstream_server.hpp"
#include "support/upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A raw TCP service on loopback (SSH-like: no HTTP) that echoes what it gets, once. With
// a banner it speaks first, as SMTP or MySQL servers do.
class EchoServer {
 public:
  explicit EchoServer(std::string banner = {}) : banner_(std::move(banner)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("echo server: bind");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      if (!banner_.empty()) ::send(c, banner_.data(), banner_.size(), MSG_NOSIGNAL);
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(c, buf, sizeof buf, 0)) > 0) ::send(c, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }

 private:
  std::string banner_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

std::string policy_for(std::uint16_t http_port, std::uint16_t echo_port) {
  return R"({
  "version": 1,
  "allow": ["allowed.test"],
  "ports": [443, )" + std::to_string(http_port) + ", " + std::to_string(echo_port) + R"(],
  "internal": { "allow": ["127.0.0.1/32"] },
  "resolve": { "allowed.test": ["127.0.0.1"] }
})";
}

TEST(LaunchTransparent, ProgramsIgnoringTheProxyReachAllowedNamesThroughIt) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(45);
  HttpServer upstream;
  EchoServer echo;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_for(upstream.port(), echo.port()));
  const auto db = dir.path() / "a.db";
  const std::string port = std::to_string(upstream.port());
  const std::string script = R"PY(
import socket, sys
s = socket.create_connection(("allowed.test", int(sys.argv[1])))
s.sendall(b"GET /raw HTTP/1.0\r\nHost: allowed.test\r\n\r\n")
print("python:", s.recv(4096).split(b"\r\n")[0].decode())
e = socket.create_connection(("allowed.test", int(sys.argv[2])))
payload = bytes(range(256)) * 64
e.sendall(payload)
e.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = e.recv(65536)
    if not chunk:
        break
    got += chunk
print("echo:", "exact" if got == payload else "differs (%d bytes)" % len(got))
)PY";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS --noproxy '*' http://allowed.test:" + port + "/curl; echo; " +
                               kPython + " -c '" + script + "' " + port + " " + std::to_string(echo.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(r.out, HasSubstr("python: HTTP/1.0 200")) << "answered by netbox's request loop, in the request's version";
  EXPECT_THAT(r.out, HasSubstr("echo: exact"));
  // One row per connection (the HTTP ones also have a row per request, under it).
  const auto rows = query(db, "SELECT kind, host, port, decision, resolved_addr, bytes_up FROM requests "
                              "WHERE parent_id IS NULL ORDER BY id");
  ASSERT_EQ(rows.size(), 3u) << r.err;
  for (const auto& row : rows) {
    EXPECT_EQ(row[0], "transparent");
    EXPECT_EQ(row[1], "allowed.test");  // the real name, not the synthetic address
    EXPECT_EQ(row[3], "allow");
    EXPECT_EQ(row[4], "127.0.0.1");
  }
  EXPECT_EQ(rows[2][2], std::to_string(echo.port()));
  EXPECT_EQ(rows[2][5], std::to_string(256 * 64));
  expect_nothing_left(subnet);
}

TEST(LaunchTransparent, FrontedTlsAndInternalLiteralsAreRefusedWithARow) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(46);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_for(upstream.port(), upstream.port()));
  const auto db = dir.path() / "a.db";
  // TLS to allowed.test's synthetic address whose ClientHello names another host; then a
  // literal address (the host side of this launch's own link: netbox, never a destination).
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS -k --noproxy '*' --connect-to fronted.test:443:allowed.test:443 " +
                               "https://fronted.test/; echo tls=$?; " + kCurl + " -sS --noproxy '*' http://" +
                               subnet.addr_prefix + "1:" + std::to_string(upstream.port()) + "/; echo literal=$?"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("tls=0")));
  // Plain HTTP to the literal is answered with the refusal's reason.
  EXPECT_THAT(r.out, HasSubstr("Reason: " + subnet.addr_prefix + "1 is internal"));
  EXPECT_EQ(upstream.connections(), 0);
  const auto rows = query(db, "SELECT kind, host, decision, rule, reason FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 2u) << r.err;
  EXPECT_EQ(rows[0][0], "transparent");
  EXPECT_EQ(rows[0][1], "allowed.test");
  EXPECT_EQ(rows[0][2], "deny");
  EXPECT_EQ(rows[0][3], "sni");
  EXPECT_THAT(rows[0][4], HasSubstr("fronted.test"));
  EXPECT_THAT(rows[0][4], HasSubstr("domain fronting"));
  EXPECT_EQ(rows[1][1], subnet.addr_prefix + "1");
  EXPECT_EQ(rows[1][2], "deny");
  EXPECT_FALSE(rows[1][3].empty());
  expect_nothing_left(subnet);
}

// Plain HTTP on port 80 is read before it is decided: a Host header that is not the name
// the address stands for is refused, and every refusal is the usual 403 with its reason.
TEST(LaunchTransparent, PlainHttpWithAnotherHostOrToAnInternalLiteralGets403WithTheReason) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(48);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));  // allowed.test on port 80
  const auto db = dir.path() / "a.db";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS -i --noproxy '*' -H 'Host: evil.test' http://allowed.test/; " +
                               kCurl + " -sS -i --noproxy '*' http://" + subnet.addr_prefix + "1/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Reason: the Host header names evil.test, not allowed.test"));
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Decision: deny"));
  const auto rows = query(db, "SELECT kind, host, port, decision, rule, status FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 2u) << r.err;
  EXPECT_EQ(rows[0], (std::vector<std::string>{"transparent", "allowed.test", "80", "deny", "host", "403"}));
  EXPECT_EQ(rows[1][1], subnet.addr_prefix + "1");
  EXPECT_EQ(rows[1][3], "deny");
  EXPECT_EQ(rows[1][5], "403");
  expect_nothing_left(subnet);
}

// A program that ignores the proxy variables must not get past inspection and `rules`:
// captured TLS to an inspected host is terminated exactly like an inspected CONNECT (one
// row per request, linked to the connection's row of kind `transparent`; rules apply),
// and a raw connection to a host some rule names, which netbox cannot check, is refused.
TEST(LaunchTransparent, CapturedTlsToAnInspectedHostIsInspectedAndRulesCannotBeTunnelledPast) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(103);
  test::TlsUpstreamServer upstream("allowed.test");
  EchoServer echo;
  test::TempDir dir;
  const auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
  HostDir shared;
  const auto ca_pem = shared.file("netbox-ca.pem", ca.certificate_pem());
  auto j = nlohmann::json::parse(policy_for(upstream.port(), echo.port()));
  j["inspect"] = {"allowed.test"};
  j["allow"].push_back("raw.test");
  j["resolve"]["raw.test"] = {"127.0.0.1"};
  j["rules"] = nlohmann::json::parse(R"([{"host": "allowed.test", "methods": ["GET"], "action": "allow"},
                                         {"host": "raw.test", "methods": ["GET"], "action": "allow"}])");
  auto policy = dir.write("policy.json", j.dump());
  const auto db = dir.path() / "a.db";
  const std::string url = "https://allowed.test:" + std::to_string(upstream.port()) + "/inside";
  const std::string curl = std::string(kCurl) + " -sS --noproxy '*' --cacert " + ca_pem.string() + " ";
  const std::string raw = "import socket, sys\n"
                          "e = socket.create_connection((\"raw.test\", int(sys.argv[1])))\n"
                          "e.sendall(b\"anything\")\n"
                          "try:\n    got = e.recv(100)\nexcept OSError:\n    got = b\"\"\n"
                          "print(\"raw:\", len(got))\n";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--ca-dir",
                           (dir.path() / "ca").string(), "--upstream-ca", upstream.ca_pem().string(), "--", kSh, "-c",
                           curl + url + "; echo; " + curl + "-o /dev/null -w 'post=%{http_code}\\n' -X POST " + url +
                               "; " + kPython + " -c '" + raw + "' " + std::to_string(echo.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"target\":\"/inside\"")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("post=403"));
  EXPECT_THAT(r.out, HasSubstr("raw: 0")) << "nothing relayed from the raw service";
  EXPECT_EQ(upstream.requests(), 1u);
  const auto inner = test::query(db, "SELECT r.kind, r.method, r.path, r.decision, t.kind, t.host FROM requests r "
                                     "JOIN requests t ON t.id = r.parent_id ORDER BY r.id");
  ASSERT_EQ(inner.size(), 2u) << r.err;
  EXPECT_EQ(inner[0], (std::vector<std::string>{"http", "GET", "/inside", "allow", "transparent", "allowed.test"}));
  EXPECT_EQ(inner[1], (std::vector<std::string>{"http", "POST", "/inside", "deny", "transparent", "allowed.test"}));
  const auto rawrow = test::query(db, "SELECT kind, host, decision, rule FROM requests WHERE port = " +
                                          std::to_string(echo.port()));
  ASSERT_EQ(rawrow.size(), 1u);
  EXPECT_EQ(rawrow[0], (std::vector<std::string>{"transparent", "raw.test", "deny", "rules"}));
  expect_nothing_left(subnet);
}

// Plain HTTP is recognised on any port by its first bytes and runs the proxy's own request
// loop: each request of a keep-alive connection is decided with `rules` and has its own
// row under the connection's; a Host header naming another host is refused on any port.
TEST(LaunchTransparent, CapturedPlainHttpOnAnyPortHasOneRowPerRequestAndRulesApply) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(104);
  test::UpstreamServer upstream;
  test::TempDir dir;
  auto j = nlohmann::json::parse(policy_for(upstream.port(), upstream.port()));
  j["rules"] = nlohmann::json::parse(R"([{"host": "allowed.test", "methods": ["GET"], "action": "allow"}])");
  auto policy = dir.write("policy.json", j.dump());
  const auto db = dir.path() / "a.db";
  const std::string base = "http://allowed.test:" + std::to_string(upstream.port());
  const std::string curl = std::string(kCurl) + " -sS --noproxy '*' ";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           curl + base + "/one " + base + "/two " + base + "/three; echo; " + curl +
                               "-o /dev/null -w 'post=%{http_code}\\n' -d x " + base + "/post; " + curl +
                               "-i -H 'Host: evil.test' " + base + "/evil"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"target\":\"/three\"")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("post=403"));
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Reason: the Host header names evil.test, not allowed.test"));
  EXPECT_EQ(upstream.requests(), 3u) << "the POST and the other Host never reached the upstream";
  const auto inner = query(db, "SELECT r.kind, r.method, r.path, r.decision, r.status, t.id FROM requests r "
                               "JOIN requests t ON t.id = r.parent_id WHERE t.kind = 'transparent' ORDER BY r.id");
  ASSERT_EQ(inner.size(), 4u) << r.err;
  EXPECT_EQ(inner[0], (std::vector<std::string>{"transparent", "GET", "/one", "allow", "200", inner[0][5]}));
  EXPECT_EQ(inner[1][2], "/two");
  EXPECT_EQ(inner[2][2], "/three");
  EXPECT_EQ(inner[0][5], inner[2][5]) << "three requests on one connection, under its row";
  EXPECT_EQ(inner[3], (std::vector<std::string>{"transparent", "POST", "/post", "deny", "403", inner[3][5]}));
  EXPECT_NE(inner[3][5], inner[0][5]);
  const auto top = query(db, "SELECT kind, decision, rule FROM requests WHERE parent_id IS NULL ORDER BY id");
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[2], (std::vector<std::string>{"transparent", "deny", "host"}));
  expect_nothing_left(subnet);
}

// TLS is recognised on any port by its first bytes (domain fronting refused there too),
// and a service whose server speaks first is relayed after a short wait.
TEST(LaunchTransparent, TlsOnAnyPortIsReadAndAServerThatSpeaksFirstStillWorks) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(105);
  test::TlsUpstreamServer tls_upstream("allowed.test");
  EchoServer smtp("220 smtp.allowed.test ready\r\n");
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_for(tls_upstream.port(), smtp.port()));
  const auto db = dir.path() / "a.db";
  const std::string tls_port = std::to_string(tls_upstream.port());
  HostDir shared;  // the agent reads the upstream's CA from here
  const auto ca_pem = shared.path() / "upstream-ca.pem";
  std::filesystem::copy_file(tls_upstream.ca_pem(), ca_pem);
  std::filesystem::permissions(ca_pem, std::filesystem::perms(0644));
  const std::string talk = "import socket, sys\n"
                           "s = socket.create_connection((\"allowed.test\", int(sys.argv[1])))\n"
                           "banner = s.recv(100)\n"
                           "s.sendall(b\"HELO me\\r\\n\")\n"
                           "print(\"banner:\", banner.decode().strip(), \"echo:\", s.recv(100).decode().strip())\n";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS --noproxy '*' --cacert " + ca_pem.string() +
                               " https://allowed.test:" + tls_port + "/ok -o /dev/null -w 'tls=%{http_code}\\n'; " +
                               kCurl + " -sS -k --noproxy '*' --connect-to fronted.test:" + tls_port +
                               ":allowed.test:" + tls_port + " https://fronted.test:" + tls_port +
                               "/; echo fronted=$?; " + kPython + " -c '" + talk + "' " + std::to_string(smtp.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tls=200")) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("fronted=0")));
  EXPECT_THAT(r.out, HasSubstr("banner: 220 smtp.allowed.test ready echo: HELO me")) << r.out << r.err;
  const auto rows = query(db, "SELECT kind, port, decision, rule FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 3u) << r.err;
  EXPECT_EQ(rows[0][2], "allow");
  EXPECT_EQ(rows[1], (std::vector<std::string>{"transparent", tls_port, "deny", "sni"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"transparent", std::to_string(smtp.port()), "allow", rows[2][3]}));
  expect_nothing_left(subnet);
}

// On ports 80 and 443 the agent must speak first: pausing before its request does not
// turn it into a "server speaks first" connection relayed without the Host check.
TEST(LaunchTransparent, PausingBeforeTheRequestOnPort80DoesNotSkipTheHostCheck) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(106);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(8080));  // allowed.test on port 80
  const auto db = dir.path() / "a.db";
  const std::string script = "import socket, time\n"
                             "s = socket.create_connection((\"allowed.test\", 80))\n"
                             "time.sleep(1)\n"
                             "s.sendall(b\"GET / HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n\")\n"
                             "print(\"got:\", s.recv(4096).split(b\"\\r\\n\")[0].decode())\n";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("got: HTTP/1.1 403")) << r.out << r.err;
  const auto rows = query(db, "SELECT kind, decision, rule FROM requests");
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"transparent", "deny", "host"}}));
  expect_nothing_left(subnet);
}

// The captured door's share of FrontingDoorsTest (tests/integration/proxy): from inside a
// launch, one empty line before a request with another Host on port 80 (was relayed
// unread), a ClientHello naming another host with a final dot, and one that cannot be
// read (two server names; both were "malformed" and let through) are refused with a row
// each, before anything is dialled (issue 22, item 6).
TEST(LaunchTransparent, FrontingDressedUpIsRefusedOnTheCapturedDoor) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(137);
  test::TempDir dir;
  auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["allowed.test"], "ports": [80, 443],
      "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"allowed.test": ["127.0.0.1"]}})");
  const auto db = dir.path() / "a.db";
  const std::string script =
      "import socket, struct\n"
      "def hello(*names):\n"
      "    ext = b''\n"
      "    for n in names:\n"
      "        n = n.encode()\n"
      "        ext += struct.pack('!HHHBH', 0, len(n) + 5, len(n) + 3, 0, len(n)) + n\n"
      "    body = struct.pack('!H', 0x0303) + b'\\xab' * 32 + b'\\x00' + struct.pack('!HH', 2, 0x1301)\n"
      "    body += b'\\x01\\x00' + struct.pack('!H', len(ext)) + ext\n"
      "    msg = b'\\x01' + len(body).to_bytes(3, 'big') + body\n"
      "    return b'\\x16\\x03\\x01' + struct.pack('!H', len(msg)) + msg\n"
      "for name, port, data in [('crlf', 80, b'\\r\\nGET / HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n'),\n"
      "                         ('dot', 443, hello('evil.test.')),\n"
      "                         ('unreadable', 443, hello('allowed.test', 'evil.test'))]:\n"
      "    s = socket.create_connection(('allowed.test', port))\n"
      "    s.sendall(data)\n"
      "    try:\n"
      "        got = s.recv(4096).split(b'\\r\\n')[0].decode() or 'closed'\n"
      "    except ConnectionResetError:\n"
      "        got = 'reset'\n"
      "    print(name, got)\n";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("crlf HTTP/1.1 403")) << r.out << r.err;
  const auto rows = query(db, "SELECT kind, port, decision, rule FROM requests ORDER BY id");
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"transparent", "80", "deny", "host"},
                                                         {"transparent", "443", "deny", "sni"},
                                                         {"transparent", "443", "deny", "sni"}}))
      << r.out << r.err;
  expect_nothing_left(subnet);
}

// Runtimes that resolve and connect on their own: Node's fetch ignores the proxy variables
// (before Node 24) and is captured; the JVM reads JAVA_TOOL_OPTIONS and uses the proxy.
TEST(LaunchTransparent, NodeFetchAndJavaHttpClientWorkWithNoConfiguration) {
  NETBOX_REQUIRE_ROOT();
  if (!std::filesystem::exists("/usr/bin/node") || !std::filesystem::exists("/usr/bin/java"))
    GTEST_SKIP() << "needs node and java (scripts/install-deps.sh installs them)";
  const auto subnet = test_subnet(47);
  HttpServer upstream;
  HostDir host;
  const auto src = host.java_get();
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_for(upstream.port(), upstream.port()));
  const auto db = dir.path() / "a.db";
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                           "node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log(\"node:\", t))' " +
                               url + "; java " + src.string() + " " + url},
                  std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(std::string("node: ") + HttpServer::kBody));
  EXPECT_THAT(r.out, HasSubstr(std::string("java: 200 ") + HttpServer::kBody));
  const auto rows = query(db, "SELECT kind, host, decision FROM requests ORDER BY id");
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"transparent", "allowed.test", "allow"},
                                                          {"transparent", "allowed.test", "allow"},
                                                          {"http", "allowed.test", "allow"}}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
