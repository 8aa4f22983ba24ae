#pragma once
// A proxy with TLS inspection and one credential, for the tests that attack the
// credential's secret and placeholder (credentials_test.cpp, audit_flood_test.cpp):
// upstream.test (inspected, the credential's host), other.test (allowed, inspected too,
// not the credential's) and plain.test (allowed, not inspected), all on 127.0.0.1; the
// agent "coder" on 127.0.0.1 holds kPlaceholder for kSecret. The proxy's log goes to
// log_path; `tune` changes the options before the proxy starts.
#include "proxy_fixture.hpp"

#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

namespace netbox::test {

inline constexpr const char* kSecret = "sk-live-5ecret-value-never-in-the-namespace";
inline constexpr const char* kPlaceholder = "nbx-openai-00112233445566778899aabbccddeeff";

class CredentialsFixture : public ProxyTest {
 protected:
  CredentialsFixture() : tls_upstream("upstream.test") {
    auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
    ca_pem = dir.path() / "netbox-ca.pem";
    std::ofstream(ca_pem) << ca.certificate_pem();
    log_path = dir.path() / "proxy.log";
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    configure = [this](proxy::ProxyOptions& o) {
      o.ca_dir = dir.path() / "ca";
      o.upstream_ca = tls_upstream.ca_pem();
      o.log_fd = log_fd;
      tune(o);
    };
  }
  ~CredentialsFixture() override {
    if (log_fd >= 0) ::close(log_fd);
  }

  void start() {
    auto j = nlohmann::json::parse(base_policy());
    j["allow"] = {"upstream.test", "other.test", "plain.test"};
    j["resolve"]["other.test"] = {"127.0.0.1"};
    j["resolve"]["plain.test"] = {"127.0.0.1"};
    j["ports"] = {tls_upstream.port(), upstream.port()};
    for (auto p : more_ports) j["ports"].push_back(p);
    j["inspect"] = {"upstream.test", "other.test"};
    j["credentials"] = nlohmann::json::parse(R"([{"name": "openai", "hosts": ["upstream.test"],
      "header": "Authorization", "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}])");
    start_proxy(j.dump());
    proxy::AgentAttachment a;
    a.addr = boost::asio::ip::make_address("127.0.0.1");
    a.name = "coder";
    a.credentials.push_back({"openai", kPlaceholder, proxy::Secret(kSecret)});
    server->attach_agent(a);
  }

  std::function<void(proxy::ProxyOptions&)> tune = [](proxy::ProxyOptions&) {};
  std::vector<unsigned short> more_ports;  // allowed besides the two upstreams'; before start()
  TlsUpstreamServer tls_upstream;
  std::filesystem::path ca_pem, log_path;
  int log_fd = -1;
};

}  // namespace netbox::test
