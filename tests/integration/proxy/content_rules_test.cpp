// The content rules (issue 25) as an injected agent would test them: a secret of every
// listed kind, in the URL, a header and the body, as written and percent-, base64- and
// hex-encoded, sent on plain HTTP and inside an inspected tunnel, is refused 403 naming
// the rule before any of it reaches the upstream, and recorded as a `secret_in_request`
// event naming the kind and a digest: the value is in no byte of the SQLite file nor of
// the log. A profile in `report` lets it through and still records it. A host under a
// wildcard allow whose label carries encoded data is refused before any lookup, while
// long ordinary CDN names pass.
#include "credentials_fixture.hpp"

#include "support/proxy_client.hpp"
#include "support/secret_samples.hpp"
#include "agent_tls.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace netbox::test {
namespace {

using nlohmann::json;

using Sample = SecretSample;
std::vector<Sample> samples() { return secret_samples(); }  // one of each kind

struct Encoded {
  std::string name, text;
};

// The value as a URL, a header and a body can all carry it: spaces and the like escaped
// in "plain" (a private-key line has spaces), every byte in "percent".
std::vector<Encoded> encodings(const std::string& value) {
  std::string plain;
  for (char c : value) plain += c == ' ' ? std::string("%20") : c == '=' ? std::string("%3D") : std::string(1, c);
  return {{"plain", plain}, {"percent", percent_all(value)}, {"base64", base64(value)}, {"hex", hex(value)}};
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class ContentRulesTest : public CredentialsFixture {
 protected:
  ContentRulesTest() {
    tune = [](proxy::ProxyOptions& o) { o.log_requests = proxy::LogRequests::all; };
  }

  // The three places of one request, one at a time: `where` is "url", "header" or "body".
  static std::string request(const std::string& where, const std::string& text, const std::string& target_prefix,
                             const std::string& host) {
    const std::string path = where == "url" ? "/v1/upload?note=" + text : "/v1/upload";
    const std::string body = where == "body" ? R"({"log": "found )" + text + R"( in ~/.env"})" : "{}";
    return "POST " + target_prefix + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
           (where == "header" ? "X-Debug: " + text + "\r\n" : "") + "Content-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  }

  std::string plain_authority() const { return "plain.test:" + std::to_string(upstream.port()); }
  std::string inspected_authority() const { return "upstream.test:" + std::to_string(tls_upstream.port()); }

  // Plain HTTP through the proxy door: the status and the decision header.
  Reply send_plain(const std::string& where, const std::string& text) {
    ProxyConnection conn(port);
    return conn.send(request(where, text, "http://" + plain_authority(), plain_authority()));
  }
  // Inside an inspected tunnel: the raw answer.
  std::string send_inspected(const std::string& where, const std::string& text) {
    AgentTls tls(port, inspected_authority());
    EXPECT_TRUE(tls.connected());
    return tls.exchange(request(where, text, "", inspected_authority()));
  }

  std::vector<EventRow> secret_events() {
    std::vector<EventRow> out;
    for (auto& e : events())
      if (e.kind == "secret_in_request") out.push_back(e);
    return out;
  }

  // Not one byte of the store or of the log holds `value`, in any form the agent sent.
  void expect_recorded_without(const std::vector<Sample>& sent) {
    stop_proxy();
    const std::string db = file_bytes(db_path);
    std::string wal = file_bytes(db_path.string() + "-wal");
    const std::string log = file_bytes(log_path);
    ASSERT_FALSE(db.empty());
    ASSERT_FALSE(log.empty());
    for (const auto& s : sent)
      for (const auto& e : encodings(s.value)) {
        EXPECT_EQ(db.find(e.text), std::string::npos) << s.kind << " " << e.name << " in the store";
        EXPECT_EQ(wal.find(e.text), std::string::npos) << s.kind << " " << e.name << " in the store's WAL";
        EXPECT_EQ(log.find(e.text), std::string::npos) << s.kind << " " << e.name << " in the log";
      }
  }
};

TEST_F(ContentRulesTest, EverySecretKindInEveryPlaceAndEncodingIsRefusedOnPlainHttp) {
  start();
  const auto before = upstream.requests();
  std::size_t sent = 0;
  for (const auto& s : samples())
    for (const auto& e : encodings(s.value))
      for (const std::string where : {"url", "header", "body"}) {
        SCOPED_TRACE(s.kind + " " + e.name + " in the " + where);
        const auto r = send_plain(where, e.text);
        EXPECT_EQ(r.status, 403);
        EXPECT_EQ(r.header("x-netbox-decision"), "deny");
        EXPECT_NE(r.header("x-netbox-reason").find(s.kind), std::string::npos) << r.header("x-netbox-reason");
        ++sent;
      }
  EXPECT_EQ(upstream.requests(), before);  // nothing of any of them went upstream
  // An ordinary request still goes.
  EXPECT_EQ(send_plain("body", "a note about tokens, keys and AKIA-style ids").status, 200);
  const auto rows = read_rows();
  std::size_t refused = 0;
  for (const auto& r : rows)
    if (r.rule == "guardian.content.secrets") {
      ++refused;
      EXPECT_EQ(r.decision, "deny");
      EXPECT_EQ(r.status, 403);
    }
  EXPECT_EQ(refused, sent);
  for (const auto& s : samples()) {  // every kind named in some row's reason
    bool named = false;
    for (const auto& r : rows) named = named || (r.rule == "guardian.content.secrets" && r.reason.find(s.kind) != std::string::npos);
    EXPECT_TRUE(named) << s.kind;
  }
  // Each one counted; the events row by row until the agent's flood is folded (its
  // particulars then read "*", as any agent event's do).
  std::uint64_t counted = 0;
  for (const auto& c : server->counters().agent_events)
    if (c.kind == "secret_in_request") counted = c.count;
  EXPECT_EQ(counted, sent);
  const auto seen = secret_events();
  ASSERT_FALSE(seen.empty());
  for (const auto& e : seen) {
    const auto d = json::parse(e.detail);
    if (d["digest"] == "*") continue;
    EXPECT_EQ(d["digest"].get<std::string>().size(), 12u);
    EXPECT_EQ(d["action"], "refused");
    EXPECT_EQ(d["formats_version"], 1);
  }
  expect_recorded_without(samples());
}

TEST_F(ContentRulesTest, EverySecretKindInEveryPlaceAndEncodingIsRefusedOnAnInspectedHost) {
  start();
  const auto before = tls_upstream.requests();
  for (const auto& s : samples())
    for (const auto& e : encodings(s.value))
      for (const std::string where : {"url", "header", "body"}) {
        SCOPED_TRACE(s.kind + " " + e.name + " in the " + where);
        const auto answer = send_inspected(where, e.text);
        EXPECT_EQ(answer.rfind("HTTP/1.1 403", 0), 0u) << answer.substr(0, 200);
        EXPECT_NE(answer.find("guardian.content.secrets"), std::string::npos);
        EXPECT_NE(answer.find(s.kind), std::string::npos);
      }
  EXPECT_EQ(tls_upstream.requests(), before);
  // The credential still goes where it belongs: the placeholder is the tripwire's, not a secret.
  const auto ok = send_inspected("header", kPlaceholder);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok.substr(0, 200);
  EXPECT_EQ(secret_events().empty(), false);
  expect_recorded_without(samples());
}

TEST_F(ContentRulesTest, ABodySecretPastTheWindowIsNotSearchedAndOneInsideItIsEvenAfterALongPrefix) {
  start();
  const std::string token = "ghp_" + run_of(kAlnum, 36, 201);
  ProxyConnection conn(port);
  // 60 KiB of filler, then the token: inside the default 64K window.
  const std::string inside = std::string(60 * 1024, 'a') + " " + token;
  const auto r = conn.send("POST http://" + plain_authority() + "/up HTTP/1.1\r\nHost: " + plain_authority() +
                           "\r\nContent-Length: " + std::to_string(inside.size()) + "\r\n\r\n" + inside);
  EXPECT_EQ(r.status, 403);
  // Past it (70 KiB of filler): the documented limit of the rule, let through.
  ProxyConnection conn2(port);
  const std::string past = std::string(70 * 1024, 'a') + " " + token;
  const auto r2 = conn2.send("POST http://" + plain_authority() + "/up HTTP/1.1\r\nHost: " + plain_authority() +
                             "\r\nContent-Length: " + std::to_string(past.size()) + "\r\n\r\n" + past);
  EXPECT_EQ(r2.status, 200);
}

TEST_F(ContentRulesTest, AProfileInReportModeLetsASecretGoAndRecordsIt) {
  auto j = json::parse(base_policy(R"("guardian": {"content": {"secrets": "report"}})"));
  start_proxy(j.dump());
  const std::string token = "ghp_" + run_of(kAlnum, 36, 301);
  const auto r = proxy_get(port, upstream_url("/echo?t=" + token));
  EXPECT_EQ(r.status, 200);
  const auto seen = secret_events();
  ASSERT_EQ(seen.size(), 1u);
  const auto d = json::parse(seen[0].detail);
  EXPECT_EQ(d["kind"], "github_token");
  EXPECT_EQ(d["action"], "reported");
  EXPECT_EQ(d["where"], "the URL");
}

TEST_F(ContentRulesTest, TheSecretInRequestTriggerFiresItsRule) {
  start_proxy(base_policy(R"("guardian": {"rules": [{"on": ["secret_in_request"], "action": "report"}]})"));
  const std::string token = "AKIA" + run_of(kUpperDigits, 16, 401);
  EXPECT_EQ(proxy_get(port, upstream_url("/echo"), "X-Key: " + token + "\r\n").status, 403);
  std::size_t actions = 0;
  for (const auto& e : events())
    if (e.kind == "guardian_action") {
      ++actions;
      EXPECT_EQ(json::parse(e.detail)["trigger"], "secret_in_request");
    }
  EXPECT_EQ(actions, 1u);
}

// Names under a wildcard allow: one whose label below the wildcard carries data is
// refused before any lookup (none is pinned or served for it: a lookup would fail as
// 502, not 403); long ordinary names pass.
TEST_F(ContentRulesTest, AnEncodedLabelUnderAWildcardIsRefusedAndOrdinaryLongNamesPass) {
  const std::vector<std::string> ordinary = {"production-assets-eu-west-1-mirror.cdn.test",
                                             "d3k4ab8gy1xsmf.cdn.test", "e12345.dscx.akamaiedge.cdn.test",
                                             "storage-account-name.blob.core.windows.cdn.test"};
  auto j = json::parse(base_policy());
  j["allow"].push_back("*.cdn.test");
  for (const auto& n : ordinary) j["resolve"][n] = {"127.0.0.1"};
  start_proxy(j.dump());
  for (const auto& n : ordinary) {
    const auto r = proxy_get(port, "http://" + n + ":" + std::to_string(upstream.port()) + "/echo");
    EXPECT_EQ(r.status, 200) << n << ": " << r.header("x-netbox-reason");
  }
  for (const std::string n : {"4f2a9c0b7e1d3a5f6b8c9d0e1f2a3b4c.cdn.test",            // hex
                              "mfrggzdfmztwq2lknnwg23tpobyxe43u.cdn.test",            // base32
                              "x.dGhlIHNlY3JldCBpcyBpbiB0aGUgbGFiZWw2.cdn.test"}) {  // base64-ish, deeper
    const auto r = proxy_get(port, "http://" + n + ":" + std::to_string(upstream.port()) + "/echo");
    EXPECT_EQ(r.status, 403) << n;
    EXPECT_NE(r.header("x-netbox-reason").find("*.cdn.test"), std::string::npos) << r.header("x-netbox-reason");
    const auto c = proxy_connect(port, n + ":" + std::to_string(upstream.port()));
    EXPECT_EQ(c.status, 403) << n;
  }
  const auto last = last_row();
  EXPECT_EQ(last.rule, "guardian.content.encoded_labels");
  std::size_t seen = 0;
  for (const auto& e : events()) seen += e.kind == "encoded_label";
  EXPECT_GE(seen, 1u);
  // An exact entry is the policy's own word for that name: not second-guessed.
  auto k = json::parse(base_policy());
  k["allow"].push_back("4f2a9c0b7e1d3a5f6b8c9d0e1f2a3b4c.cdn.test");
  k["resolve"]["4f2a9c0b7e1d3a5f6b8c9d0e1f2a3b4c.cdn.test"] = {"127.0.0.1"};
  stop_proxy();
  start_proxy(k.dump());
  EXPECT_EQ(proxy_get(port, "http://4f2a9c0b7e1d3a5f6b8c9d0e1f2a3b4c.cdn.test:" + std::to_string(upstream.port()) +
                                "/echo").status,
            200);
}

}  // namespace
}  // namespace netbox::test
