// Client identity on a shared proxy (issue 26 item 5): with --client-tokens, a client that
// would be `anonymous` must show a token from the book. Real curl, through the HTTP door
// (plain and CONNECT) and SOCKS5, with the proxy URL's password: a good token makes the rows
// the token's agent's and applies its profile; none, a forged, a revoked (after the book is
// rewritten under the running proxy) or an expired token gets 407 and a row; the token is in
// no row, log, event or export (the OCSF JSONL file and a real OTLP/HTTP receiver on
// loopback, both attached to every proxy here); --allow-anonymous serves only the client that sent none. A token
// revoked (with the CLI) or expired while a keep-alive connection is open stops at that
// connection's next request.
#include "export_files.hpp"
#include "proxy_fixture.hpp"

#include "support/curl.hpp"
#include "support/process.hpp"
#include "support/proxy_client.hpp"
#include "support/secret_samples.hpp"

#include "netbox/export/exporter.hpp"
#include "netbox/tokens/token_book.hpp"

#include <gmock/gmock.h>

#include <boost/asio/ip/address.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class ClientTokensTest : public ProxyTest {
 protected:
  // The `builders` profile may reach upstream.test; the top level may not.
  void start(bool allow_anonymous = false) {
    good = tokens::issue_token("ci-runner", "builders", 1h, unix_now());
    revoked = tokens::issue_token("old-runner", "builders", 1h, unix_now());
    expired = tokens::issue_token("late-runner", "builders", 1h, unix_now() - 7200);
    book_path = dir.path() / "client-tokens.json";
    tokens::save_token_book(book_path, tokens::TokenBook({good.entry, revoked.entry, expired.entry}));
    log_path = dir.path() / "proxy.log";
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    jsonl = dir.path() / "export.jsonl";
    receiver.emplace(dir.path(), "ok");
    configure = [this, allow_anonymous](proxy::ProxyOptions& o) {
      o.client_tokens = book_path;
      o.allow_anonymous = allow_anonymous;
      o.log_fd = log_fd;  // searched for the tokens' secrets
      // Both exports, searched too.
      exporter = std::make_shared<siem::Exporter>(
          std::vector<siem::SinkSpec>{siem::parse_sink("ocsf-jsonl:" + jsonl.string()), siem::parse_sink(receiver->sink())},
          siem::ExporterOptions{});
      o.exporter = exporter;
    };
    start_proxy(base_policy(R"("allow": ["nothing.test"], "agents": {"builders": {"allow": ["upstream.test"]}})"));
    socks_port = server->add_listener({boost::asio::ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks).port();
  }
  std::string http_proxy(const std::string& token) const {
    return "http://" + (token.empty() ? "" : "ci:" + token + "@") + "127.0.0.1:" + std::to_string(port);
  }
  std::string socks_proxy(const std::string& token) const {
    return "socks5h://" + (token.empty() ? "" : "ci:" + token + "@") + "127.0.0.1:" + std::to_string(socks_port);
  }
  RunResult get(const std::string& proxy_url) { return curl_with_status({"--proxy", proxy_url, upstream_url("/t")}); }

  ~ClientTokensTest() override {
    if (log_fd >= 0) ::close(log_fd);
  }

  tokens::IssuedToken good, revoked, expired;
  std::filesystem::path book_path, log_path, jsonl;
  std::optional<Receiver> receiver;
  std::shared_ptr<siem::Exporter> exporter;
  int log_fd = -1;
  unsigned short socks_port = 0;
};

TEST_F(ClientTokensTest, AGoodTokenIsItsAgentWithItsProfileOnEveryDoor) {
  start();
  auto r = curl_with_status({"--proxy", http_proxy(good.token), upstream_url("/echo")});
  EXPECT_EQ(status_of(r), 200) << r.out << r.err;
  // The token reached no upstream: Proxy-Authorization is hop-by-hop.
  EXPECT_THAT(body_of(r), Not(HasSubstr("Proxy-Authorization")));
  EXPECT_THAT(body_of(r), Not(HasSubstr(good.token.substr(18))));
  auto row = last_row();
  EXPECT_EQ(row.agent, "ci-runner");
  EXPECT_EQ(row.decision, "allow");
  auto s = get(socks_proxy(good.token));
  EXPECT_EQ(status_of(s), 200) << s.out << s.err;
  EXPECT_EQ(last_row().agent, "ci-runner");
  EXPECT_EQ(last_row().kind, "socks");
  EXPECT_EQ(upstream.requests(), 2u);
}

TEST_F(ClientTokensTest, NoForgedRevokedOrExpiredTokenGetsThroughAndEachIsRecorded) {
  start();
  std::string forged = good.token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  tokens::TokenBook book = tokens::load_token_book(book_path);
  ASSERT_TRUE(book.revoke(revoked.entry.id));
  tokens::save_token_book(book_path, book);
  std::this_thread::sleep_for(1100ms);  // the proxy looks at the book at most once a second

  struct Case {
    std::string token, reason;
  } cases[] = {{"", "needs a client token"},
               {forged, "does not match"},
               {revoked.token, "was revoked"},
               {expired.token, "has expired"},
               {"not-a-token", "not a netbox client token"}};
  for (const auto& c : cases) {
    auto r = get(http_proxy(c.token));
    EXPECT_EQ(status_of(r), 407) << c.reason << r.out;
    EXPECT_THAT(body_of(r), HasSubstr(c.reason));
    auto row = last_row();
    EXPECT_EQ(row.decision, "deny") << c.reason;
    EXPECT_EQ(row.rule, "client_token");
    EXPECT_EQ(*row.status, 407);
    EXPECT_EQ(row.agent, "anonymous");
    auto s = get(socks_proxy(c.token));
    EXPECT_NE(status_of(s), 200) << c.reason;
    EXPECT_EQ(last_row().rule, "client_token") << c.reason;
    EXPECT_THAT(last_row().reason, HasSubstr(c.token.empty() ? "offered no username/password" : c.reason));
  }
  // CONNECT too: the tunnel is never opened.
  auto t = curl_with_status({"--proxy", http_proxy(forged), "--proxytunnel", upstream_url("/t")});
  EXPECT_NE(status_of(t), 200);
  EXPECT_EQ(last_row().rule, "client_token");
  EXPECT_EQ(upstream.requests(), 0u);

  // And the good token, on both doors, so that its rows are exported too.
  EXPECT_EQ(status_of(get(http_proxy(good.token))), 200);
  EXPECT_EQ(status_of(get(socks_proxy(good.token))), 200);

  // No token's secret anywhere the proxy writes. The exporter's destructor drains both
  // sinks: the file is complete and the receiver has had every POST.
  stop_proxy();
  exporter.reset();
  const auto store = file_bytes(db_path) + file_bytes(db_path.string() + "-wal");
  const auto log = file_bytes(log_path);
  const auto exported = file_bytes(jsonl);
  const auto received = file_bytes(receiver->out);
  EXPECT_THAT(log, HasSubstr("rule=client_token")) << "the log was searched";
  // The exports were searched: each holds the refusals and the good token's agent.
  for (const auto* e : {&exported, &received}) {
    EXPECT_THAT(*e, HasSubstr("client_token"));
    EXPECT_THAT(*e, HasSubstr("ci-runner"));
  }
  EXPECT_EQ(json_lines(jsonl).size(), receiver->log_records().size()) << "the receiver got every record";
  for (const auto& t2 : {good.token, revoked.token, expired.token, forged}) {
    const auto secret = t2.substr(18);
    EXPECT_THAT(store, Not(HasSubstr(secret))) << "a token's secret is in the store";
    EXPECT_THAT(log, Not(HasSubstr(secret))) << "a token's secret is in the log";
    EXPECT_THAT(exported, Not(HasSubstr(secret))) << "a token's secret is in the OCSF export";
    EXPECT_THAT(received, Not(HasSubstr(secret))) << "a token's secret reached the OTLP receiver";
  }
}

// One keep-alive connection, as a client that keeps its proxy connection open for hours:
// `request(token)` is a GET on it with the token as the proxy password.
class KeptConnection {
 public:
  KeptConnection(unsigned short port, std::string url) : conn_(port), url_(std::move(url)) {}
  Reply request(const std::string& token) {
    return conn_.send("GET " + url_ + " HTTP/1.1\r\nHost: upstream.test\r\nProxy-Authorization: Basic " +
                      base64("ci:" + token, false) + "\r\n\r\n");
  }
  bool closed_within(std::chrono::milliseconds wait) { return conn_.closed_within(wait); }

 private:
  ProxyConnection conn_;
  std::string url_;
};

void expect_stopped(KeptConnection& conn, const Reply& r, const AuditRow& row, const std::string& reason) {
  EXPECT_EQ(r.status, 407) << r.body;
  EXPECT_THAT(r.body, HasSubstr(reason));
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "client_token");
  EXPECT_EQ(*row.status, 407);
  EXPECT_THAT(row.reason, HasSubstr(reason));
  EXPECT_TRUE(conn.closed_within(5s)) << "the connection of a revoked token stayed open";
}

TEST_F(ClientTokensTest, ARevokedTokenStopsAtTheNextRequestOfAnOpenConnection) {
  start();
  KeptConnection conn(port, upstream_url("/echo"));
  ASSERT_EQ(conn.request(good.token).status, 200);
  EXPECT_EQ(last_row().agent, "ci-runner");
  const auto revoke = run_netbox({"token", "revoke", "--client-tokens", book_path.string(), good.entry.id});
  ASSERT_EQ(revoke.exit_code, 0) << revoke.out << revoke.err;
  std::this_thread::sleep_for(1100ms);  // the proxy looks at the book at most once a second
  const auto r = conn.request(good.token);
  expect_stopped(conn, r, last_row(), "was revoked");
  EXPECT_EQ(upstream.requests(), 1u);
}

TEST_F(ClientTokensTest, AnExpiredTokenStopsAtTheNextRequestOfAnOpenConnection) {
  start();
  const auto brief = tokens::issue_token("brief-runner", "builders", 3s, unix_now());
  auto book = tokens::load_token_book(book_path);
  book.add(brief.entry);
  tokens::save_token_book(book_path, book);
  std::this_thread::sleep_for(1100ms);  // read again
  KeptConnection conn(port, upstream_url("/echo"));
  ASSERT_EQ(conn.request(brief.token).status, 200);
  while (unix_now() < brief.entry.expires) std::this_thread::sleep_for(100ms);
  const auto r = conn.request(brief.token);
  expect_stopped(conn, r, last_row(), "has expired");
  EXPECT_EQ(upstream.requests(), 1u);
}

TEST_F(ClientTokensTest, AllowAnonymousServesOnlyTheClientThatSentNoToken) {
  start(true);
  auto none = get(http_proxy(""));
  EXPECT_EQ(status_of(none), 403) << "served as anonymous: the top level does not allow upstream.test";
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_NE(last_row().rule, "client_token");
  std::string forged = good.token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  EXPECT_EQ(status_of(get(http_proxy(forged))), 407) << "a bad token is never downgraded to anonymous";
  EXPECT_EQ(status_of(get(http_proxy(good.token))), 200);
}

}  // namespace
}  // namespace netbox::test
