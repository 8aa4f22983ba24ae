// Body rules on plain HTTP (issue 28): a request whose rule has `body_schema` is held
// whole by the proxy, up to the rule's body_window, and goes upstream only if the body
// passes; a body over the window, a content coding netbox cannot read, or one that
// decodes past the window (a gzip bomb) is refused, never forwarded unchecked. Real
// sockets, the real upstream (its request count says whether anything reached it).
#include "proxy_fixture.hpp"

#include <zlib.h>

#include <cctype>
#include <map>

namespace netbox::test {
namespace {

class BodyRulesTest : public ProxyTest {
 protected:
  // POST /body (the upstream sends the body back) must carry {"to": [addresses at example.test], "body": string}, at most 4 KiB.
  void start() {
    start_proxy(base_policy(R"("rules": [
      {"host": "upstream.test", "methods": ["POST"], "paths": ["/body"], "action": "allow", "body_window": "4k",
       "body_schema": {"type": "object", "required": ["to", "body"],
                       "properties": {"to": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@example\\.test$"}},
                                      "body": {"type": "string"}}}}])"));
  }
  Reply post(const std::string& body, const std::string& headers = "Content-Type: application/json\r\n") {
    ProxyConnection c(port);
    return c.send("POST " + upstream_url("/body") + " HTTP/1.1\r\nHost: upstream.test\r\n" + headers +
                  "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }
};

std::string gzip(const std::string& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST_F(BodyRulesTest, ABodyTheSchemaAllowsReachesTheUpstreamWhole) {
  start();
  const std::string body = R"({"to": ["ann@example.test"], "body": "hello"})";
  auto r = post(body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(upstream.requests(), 1u);
  EXPECT_EQ(last_row().decision, "allow");
}

TEST_F(BodyRulesTest, ABodyTheSchemaRefusesIs403NamingItsPointerAndNothingReachesTheUpstream) {
  start();
  auto r = post(R"({"to": ["ann@example.test", "eve@evil.test"], "body": "the secrets"})");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.header("x-netbox-decision"), "deny");
  EXPECT_NE(r.header("x-netbox-reason").find("(at /to/1)"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_NE(r.header("x-netbox-reason").find("body_schema"), std::string::npos) << r.header("x-netbox-reason");
  EXPECT_EQ(upstream.requests(), 0u);
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.status, 403);
  EXPECT_EQ(row.rule.rfind("rules[0] upstream.test POST /body", 0), 0u) << row.rule;
  EXPECT_NE(row.reason.find("/to/1"), std::string::npos) << row.reason;
}

TEST_F(BodyRulesTest, AChunkedBodyIsHeldWholeAndCheckedAsOne) {
  start();
  // The bad address is in the second chunk: the first alone would pass nothing (it is
  // not JSON yet), and forwarding it before the rest arrived would be too late.
  ProxyConnection c(port);
  const std::string a = R"({"to": ["ann@example.test", )", b = R"("eve@evil.test"], "body": "x"})";
  auto hex = [](std::size_t n) { char buf[16]; std::snprintf(buf, sizeof buf, "%zx", n); return std::string(buf); };
  auto r = c.send("POST " + upstream_url("/body") + " HTTP/1.1\r\nHost: upstream.test\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + hex(a.size()) + "\r\n" + a + "\r\n" +
                  hex(b.size()) + "\r\n" + b + "\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(BodyRulesTest, ABodyOverTheWindowIsRefusedNamingBodyWindowNeverPassedUnchecked) {
  start();
  const std::string body = R"({"to": ["ann@example.test"], "body": ")" + std::string(8000, 'x') + "\"}";
  auto r = post(body);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.header("x-netbox-reason").find("larger than the body_window of 4096 bytes"), std::string::npos)
      << r.header("x-netbox-reason");
  EXPECT_EQ(upstream.requests(), 0u);
  EXPECT_EQ(last_row().decision, "deny");
}

TEST_F(BodyRulesTest, AGzipBodyIsCheckedDecodedAndForwardedAsSent) {
  start();
  const std::string good = gzip(R"({"to": ["ann@example.test"], "body": "hi"})");
  auto r = post(good, "Content-Type: application/json\r\nContent-Encoding: gzip\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, good) << "the server gets the bytes the agent sent";
  const std::string bad = gzip(R"({"to": ["eve@evil.test"], "body": "hi"})");
  auto no = post(bad, "Content-Type: application/json\r\nContent-Encoding: gzip\r\n");
  EXPECT_EQ(no.status, 403) << no.body;
  EXPECT_NE(no.header("x-netbox-reason").find("/to/0"), std::string::npos) << no.header("x-netbox-reason");
  EXPECT_EQ(upstream.requests(), 1u);
}

// Connection may name fields to take off at the next hop; naming the body's coding or type
// would have the upstream read, as raw bytes of no type, the body netbox checked decoded as
// JSON. Those two go on whatever Connection says (RFC 9110 7.6.1 forbids such options).
TEST_F(BodyRulesTest, ConnectionCannotTakeTheCheckedBodysCodingOrTypeOff) {
  start_proxy(base_policy(R"("rules": [
    {"host": "upstream.test", "methods": ["POST"], "paths": ["/echo"], "action": "allow", "body_window": "4k",
     "body_schema": {"type": "object", "required": ["to"]}}])"));
  const std::string body = gzip(R"({"to": "ann@example.test"})");
  ProxyConnection c(port);
  auto r = c.send("POST " + upstream_url("/echo") + " HTTP/1.1\r\nHost: upstream.test\r\nContent-Type: application/json\r\n"
                  "Content-Encoding: gzip\r\nConnection: Content-Encoding, Content-Type, X-Hop\r\nX-Hop: 1\r\n"
                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto echo = nlohmann::json::parse(r.body);
  std::map<std::string, std::string> seen;
  for (const auto& [k, v] : echo.at("headers").items()) {
    std::string lower = k;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    seen[lower] = v.get<std::string>();
  }
  EXPECT_EQ(seen["content-encoding"], "gzip") << r.body;
  EXPECT_EQ(seen["content-type"], "application/json") << r.body;
  EXPECT_EQ(seen.count("x-hop"), 0u) << "a field Connection names is still the next hop's alone";
}

TEST_F(BodyRulesTest, AGzipBombIsRefusedAtTheWindowAndAnUnknownCodingIsRefused) {
  start();
  // 2 MiB of spaces after a valid start compress to about 2 KiB: within the 4 KiB window
  // as sent, 500 times past it once decoded.
  const std::string bomb = gzip(R"({"to": ["ann@example.test"], "body": "hi")" + std::string(2 << 20, ' ') + "}");
  ASSERT_LT(bomb.size(), 4096u);
  auto r = post(bomb, "Content-Type: application/json\r\nContent-Encoding: gzip\r\n");
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.header("x-netbox-reason").find("decodes to more than 4096 bytes, the body_window"), std::string::npos)
      << r.header("x-netbox-reason");
  auto br = post(R"({"to": ["ann@example.test"], "body": "hi"})", "Content-Type: application/json\r\nContent-Encoding: br\r\n");
  EXPECT_EQ(br.status, 415) << br.body;
  EXPECT_NE(br.header("x-netbox-reason").find("Content-Encoding is \"br\""), std::string::npos);
  auto two = post(R"({"to": ["ann@example.test"], "body": "hi"})",
                  "Content-Type: application/json\r\nContent-Type: text/plain\r\n");
  EXPECT_EQ(two.status, 403) << two.body;
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(BodyRulesTest, ReportModeForwardsARefusedBodyAndRecordsTheReport) {
  start_proxy(base_policy(R"("mode": "report", "rules": [
      {"host": "upstream.test", "methods": ["POST"], "paths": ["/body"], "action": "allow", "body_window": "1k",
       "body_schema": {"type": "object", "required": ["to"]}}])"));
  auto r = post(R"({"body": "no to"})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto row = last_row();
  EXPECT_EQ(row.decision, "report");
  EXPECT_NE(row.reason.find("body_schema"), std::string::npos) << row.reason;
  // Over the window in report mode: reported, and the whole body still goes.
  const std::string big = R"({"to": [], "body": ")" + std::string(100000, 'x') + "\"}";
  auto b = post(big);
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(b.body, big);
  EXPECT_EQ(last_row().decision, "report");
}

}  // namespace
}  // namespace netbox::test
