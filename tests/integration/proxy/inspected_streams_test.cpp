// Inside an inspected connection bodies stream both ways, through the one request loop
// every HTTP door runs (issue 23 item 2): a server-sent-events answer reaches the agent
// event by event, bodies larger than the 16 MiB the inspected path once buffered pass,
// and the credential checks still see what a piece boundary splits: a placeholder in a
// request body to another host (the tripwire), a secret an upstream reflects into its
// answer (the redaction). Real sockets: a raw TLS agent after a real CONNECT, real TLS
// upstreams with their own test CAs, the agent "coder" with its credential
// (credentials_fixture.hpp).
#include "agent_tls.hpp"
#include "credentials_fixture.hpp"

#include "support/process.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <future>
#include <memory>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n";
}

class InspectedStreams : public CredentialsFixture {
 protected:
  InspectedStreams() : other_upstream("other.test") {
    // Both upstreams' CAs are trusted: other.test is inspected and not the credential's host.
    trust = dir.path() / "upstream-cas.pem";
    std::ofstream(trust) << file_text(tls_upstream.ca_pem()) << file_text(other_upstream.ca_pem());
    tune = [this](proxy::ProxyOptions& o) { o.upstream_ca = trust; };
    more_ports = {other_upstream.port()};
  }
  static std::string file_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string authority(const TlsUpstreamServer& s, const std::string& host) const {
    return host + ":" + std::to_string(s.port());
  }

  TlsUpstreamServer other_upstream;
  std::filesystem::path trust;
};

TEST_F(InspectedStreams, AServerSentEventsAnswerArrivesEventByEvent) {
  // The upstream sends event 2 only once the agent has read event 1 through the proxy: a
  // proxy that held the answer until it ended would never deliver event 1.
  auto read_one = std::make_shared<std::promise<void>>();
  auto agent_read_one = read_one->get_future().share();
  tls_upstream.script([agent_read_one](const std::string&, const TlsUpstreamServer::Send& send) {
    if (!send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
              chunk("data: one\n\n")))
      return;
    if (agent_read_one.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return;
    send(chunk("data: two\n\n") + "0\r\n\r\n");
  });
  start();
  AgentTls agent(port, authority(tls_upstream, "upstream.test"));
  ASSERT_TRUE(agent.connected());
  agent.send("GET /v1/responses HTTP/1.1\r\nHost: " + authority(tls_upstream, "upstream.test") + "\r\n\r\n");
  const auto first = agent.read_until("data: one\n\n");
  read_one->set_value();
  ASSERT_THAT(first, HasSubstr("HTTP/1.1 200")) << first;
  EXPECT_THAT(first, HasSubstr("data: one")) << "event 1 reached the agent before the answer ended";
  EXPECT_THAT(agent.read_until("data: two\n\n"), HasSubstr("data: two"));
  // The request was the credential's host's: the secret went in, the answer was searched.
  EXPECT_THAT(tls_upstream.last_echo(), HasSubstr(kSecret));
}

TEST_F(InspectedStreams, AnUploadAndADownloadLargerThan16MiBPassThroughInspection) {
  start();
  const std::string body(20 * 1024 * 1024, 'u');
  const auto file = dir.path() / "upload.bin";
  std::ofstream(file, std::ios::binary) << body;
  // The upstream echoes the body it got: the answer is larger than 16 MiB too.
  const auto r = run({"curl", "-sS", "--max-time", "60", "-x", "http://127.0.0.1:" + std::to_string(port), "--cacert",
                      ca_pem.string(), "--data-binary", "@" + file.string(), "-o", "-", "-w", "~~%{http_code}",
                      "https://" + authority(tls_upstream, "upstream.test") + "/upload"});
  const auto sep = r.out.rfind("~~");
  ASSERT_NE(sep, std::string::npos) << r.err;
  EXPECT_EQ(r.out.substr(sep + 2), "200") << r.err << r.out.substr(0, 300);
  const auto echo = nlohmann::json::parse(r.out.substr(0, sep));
  EXPECT_EQ(echo.at("body").get<std::string>().size(), body.size());
  const auto row = last_row();
  EXPECT_GT(row.bytes_up, static_cast<std::int64_t>(body.size()));  // and its head
  EXPECT_LT(row.bytes_up, static_cast<std::int64_t>(body.size() + 512));
  EXPECT_GT(row.bytes_down, static_cast<std::int64_t>(body.size()));
}

// The body windows are 64 KiB: a placeholder starting 20 bytes before the end of the
// first lies across two of them, whatever the agent's writes were.
std::string straddling_body() {
  return std::string(64 * 1024 - 20, 'a') + kPlaceholder + std::string(100, 'b');
}

TEST_F(InspectedStreams, APlaceholderSplitAcrossTwoPiecesOfAnInspectedBodyIsRefused) {
  start();
  const auto body = straddling_body();
  AgentTls agent(port, authority(other_upstream, "other.test"));
  ASSERT_TRUE(agent.connected());
  agent.send("POST /upload HTTP/1.1\r\nHost: " + authority(other_upstream, "other.test") +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  const auto answer = agent.read_until("\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 403")) << answer;
  EXPECT_THAT(answer, HasSubstr("(in the body)")) << answer;
  EXPECT_EQ(other_upstream.requests(), 0u) << "no whole request reached other.test";
  EXPECT_EQ(last_row().rule, "credentials.openai");
}

TEST_F(InspectedStreams, APlaceholderSplitAcrossTwoPiecesOfAPlainBodyIsRefused) {
  start();
  const auto body = straddling_body();
  ProxyConnection c(port);
  auto r = c.send("POST http://other.test:" + std::to_string(upstream.port()) +
                  "/upload HTTP/1.1\r\nHost: other.test\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n\r\n" + body);
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.header("x-netbox-reason"), HasSubstr("(in the body)"));
  EXPECT_EQ(upstream.requests(), 0u);
}

TEST_F(InspectedStreams, ASecretReflectedAcrossTwoPiecesOfAnAnswerNeverReachesTheAgent) {
  // Two TLS records, so two pieces: the secret's first 10 bytes end the first.
  const std::string secret = kSecret;
  tls_upstream.script([secret](const std::string&, const TlsUpstreamServer::Send& send) {
    if (!send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
              chunk("data: " + secret.substr(0, 10))))
      return;
    send(chunk(secret.substr(10) + "\n\n") + "0\r\n\r\n");
  });
  start();
  AgentTls agent(port, authority(tls_upstream, "upstream.test"));
  ASSERT_TRUE(agent.connected());
  agent.send("GET /v1/echo HTTP/1.1\r\nHost: " + authority(tls_upstream, "upstream.test") + "\r\n\r\n");
  const auto answer = agent.read_until("0\r\n\r\n");
  EXPECT_THAT(answer, HasSubstr(std::string(kPlaceholder) + "\n\n")) << answer;
  // Neither whole nor in its two halves, with the chunk framing between them.
  EXPECT_THAT(answer, Not(HasSubstr(secret.substr(0, 10)))) << answer;
  EXPECT_THAT(answer, Not(HasSubstr(secret.substr(10)))) << answer;
}

}  // namespace
}  // namespace netbox::test
