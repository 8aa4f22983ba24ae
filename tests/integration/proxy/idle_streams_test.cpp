// The idle timeout measures silence on every path (issue 22, item 18): an upstream that
// streams a chunk every 100 ms for several times limits.idle_timeout_ms has its whole
// answer relayed, by the plain HTTP door, through a CONNECT tunnel and through an
// inspected tunnel (TLS with a test CA); one that goes silent after its head is cut at the
// idle timeout. Real curl, real upstreams on loopback.
#include "proxy_fixture.hpp"

#include "support/curl.hpp"
#include "support/raw_upstream.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr int kChunks = 12;           // one every 100 ms: 1.2 s in all
constexpr auto kGap = 100ms;
constexpr const char* kLimits = R"({"idle_timeout_ms": 400})";

// "data: 0\n" ... "data: 11\n", each as a chunk of its own after a pause.
void stream_chunks(const TlsUpstreamServer::Send& send) {
  if (!send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n"))
    return;
  for (int i = 0; i < kChunks; ++i) {
    std::this_thread::sleep_for(kGap);
    const std::string line = "data: " + std::to_string(i) + "\n";
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", line.size());
    if (!send(size + line + "\r\n")) return;
  }
  send("0\r\n\r\n");
}

std::string whole_stream() {
  std::string out;
  for (int i = 0; i < kChunks; ++i) out += "data: " + std::to_string(i) + "\n";
  return out;
}

// A head, then nothing for longer than the idle timeout.
void go_silent(const TlsUpstreamServer::Send& send) {
  if (!send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")) return;
  std::this_thread::sleep_for(1500ms);
}

class IdleStreams : public ProxyTest {
 protected:
  IdleStreams() : tls_upstream("upstream.test") {
    auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
    ca_pem = dir.path() / "netbox-ca.pem";
    std::ofstream(ca_pem) << ca.certificate_pem();
    configure = [this](proxy::ProxyOptions& o) {
      o.ca_dir = dir.path() / "ca";
      o.upstream_ca = tls_upstream.ca_pem();
    };
  }
  // upstream.test on both upstreams' ports; `inspect`: the TLS one is inspected.
  void start(unsigned short plain_port, bool inspect) {
    auto j = nlohmann::json::parse(base_policy());
    j["ports"] = {tls_upstream.port(), plain_port};
    if (inspect) j["inspect"] = {"upstream.test"};
    j["limits"] = nlohmann::json::parse(kLimits);
    start_proxy(j.dump());
  }
  RunResult curl(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert", ca_pem.string()});
    return curl_with_status(args);
  }
  std::string https_url() const { return "https://upstream.test:" + std::to_string(tls_upstream.port()) + "/v1/chat"; }

  TlsUpstreamServer tls_upstream;
  std::filesystem::path ca_pem;
};

RawUpstream streaming_plain() {
  return RawUpstream([](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    stream_chunks([fd](std::string_view b) { return send_all(fd, b); });
  });
}

TEST_F(IdleStreams, AnInspectedAnswerStreamingLongerThanTheIdleTimeoutArrivesWhole) {
  tls_upstream.script([](const std::string&, const TlsUpstreamServer::Send& send) { stream_chunks(send); });
  start(upstream.port(), true);
  const auto r = curl({https_url()});
  EXPECT_EQ(status_of(r), 200) << r.err << r.out;
  EXPECT_EQ(body_of(r), whole_stream());
}

TEST_F(IdleStreams, AnInspectedAnswerThatGoesSilentIsCutAtTheIdleTimeout) {
  tls_upstream.script([](const std::string&, const TlsUpstreamServer::Send& send) { go_silent(send); });
  start(upstream.port(), true);
  const auto r = curl({https_url()});
  // Inspected answers stream as plain ones do (one request loop): the head and the first
  // chunk went on at once; the silence cuts the rest.
  EXPECT_NE(r.exit_code, 0) << "curl saw a cut answer";
  EXPECT_THAT(r.out, HasSubstr("first"));
  EXPECT_THAT(last_row().error, HasSubstr("stopped sending the body"));
}

TEST_F(IdleStreams, APlainAnswerStreamingLongerThanTheIdleTimeoutArrivesWhole) {
  auto plain = streaming_plain();
  start(plain.port(), false);
  const auto r = curl({"http://upstream.test:" + std::to_string(plain.port()) + "/v1/chat"});
  EXPECT_EQ(status_of(r), 200) << r.err << r.out;
  EXPECT_EQ(body_of(r), whole_stream());
}

TEST_F(IdleStreams, ABlindTunnelStreamingLongerThanTheIdleTimeoutArrivesWhole) {
  tls_upstream.script([](const std::string&, const TlsUpstreamServer::Send& send) { stream_chunks(send); });
  start(upstream.port(), false);
  // curl trusts the upstream's own CA: nothing in between terminates TLS.
  const auto r = curl_with_status({"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert",
                                   tls_upstream.ca_pem().string(), https_url()});
  EXPECT_EQ(status_of(r), 200) << r.err << r.out;
  EXPECT_EQ(body_of(r), whole_stream());
}

TEST_F(IdleStreams, APlainAnswerThatGoesSilentIsCutAtTheIdleTimeout) {
  RawUpstream silent([](RawUpstream& self, int fd, std::size_t) {
    std::string pending;
    if (self.read_head(fd, pending).empty()) return;
    go_silent([fd](std::string_view b) { return send_all(fd, b); });
  });
  start(silent.port(), false);
  const auto r = curl({"http://upstream.test:" + std::to_string(silent.port()) + "/v1/chat"});
  // The head and the first chunk went on at once; the silence cuts the rest.
  EXPECT_NE(r.exit_code, 0) << "curl saw a cut answer";
  EXPECT_THAT(r.out, HasSubstr("first"));
  EXPECT_THAT(last_row().error, HasSubstr("stopped sending the body"));
}

}  // namespace
}  // namespace netbox::test
