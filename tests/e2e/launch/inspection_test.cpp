// TLS inspection by the embedded proxy (`netbox launch --ca-dir`): curl inside the
// agent's namespaces reaches a real TLS upstream on loopback through an inspected
// CONNECT, trusting the netbox CA; a method rule applies inside; the CA key is hidden
// from the agent; the audit links each request to its tunnel.
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;

TEST(LaunchInspection, CurlInsideTheAgentGetsThroughAnInspectedTunnelAndRulesApply) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(50);
  test::TlsUpstreamServer upstream("allowed.test");
  test::TempDir dir;
  const auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
  HostDir shared;
  const auto ca_pem = shared.file("netbox-ca.pem", ca.certificate_pem());

  auto j = nlohmann::json::parse(policy_json(upstream.port()));
  j["inspect"] = {"allowed.test"};
  j["rules"] = nlohmann::json::parse(R"([{"host": "allowed.test", "methods": ["GET"], "action": "allow"}])");
  auto policy = dir.write("policy.json", j.dump());
  auto db = dir.path() / "audit.db";
  const std::string url = "https://allowed.test:" + std::to_string(upstream.port());
  const std::string curl = std::string(kCurl) + " -sS --cacert " + ca_pem.string() + " ";
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", db.string(), "--ca-dir",
                           (dir.path() / "ca").string(), "--upstream-ca", upstream.ca_pem().string(), "--", kSh, "-c",
                           curl + url + "/inside; echo; " + curl + "-o /dev/null -w 'post=%{http_code}\\n' -X POST " +
                               url + "/inside; cat " + (dir.path() / "ca" / "ca.key").string() +
                               " >/dev/null 2>&1; echo key=$?"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"target\":\"/inside\"")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("post=403"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("key=0"))) << "the CA key is not the agent's to read";
  EXPECT_EQ(upstream.requests(), 1u);
  auto rows = test::query(db, "SELECT r.method, r.path, r.decision, t.kind FROM requests r "
                              "JOIN requests t ON t.id = r.parent_id ORDER BY r.id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"GET", "/inside", "allow", "connect"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"POST", "/inside", "deny", "connect"}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
