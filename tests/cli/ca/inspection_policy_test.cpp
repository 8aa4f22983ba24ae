// A policy with TLS inspection's keys: `policy check` validates it, while the proxy and
// an embedded launch without a CA (--ca-dir) refuse it (exit 2, naming the key).
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <unistd.h>

namespace {

using netbox::test::run_netbox;
using ::testing::HasSubstr;

const char* kPolicy = R"({"version": 1, "allow": ["api.github.com"], "inspect": ["api.github.com"],
  "rules": [{"host": "api.github.com", "methods": ["GET"], "paths": ["/repos/acme/*"], "action": "allow"}]})";

TEST(InspectionPolicy, CheckAcceptsItButTheProxyAndLaunchRefuseWhatTheyCannotEnforce) {
  netbox::test::TempDir tmp;
  const auto policy = tmp.write("policy.json", kPolicy).string();
  auto check = run_netbox({"policy", "check", policy});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("rules:          allow rules[0] api.github.com GET /repos/acme/*"));

  auto proxy = run_netbox({"proxy", "--policy", policy, "--listen", "127.0.0.1:0", "--audit-db",
                           (tmp.path() / "a.db").string()});
  EXPECT_EQ(proxy.exit_code, 2);
  EXPECT_THAT(proxy.err, HasSubstr("inspect: TLS inspection needs the netbox CA: give --ca-dir DIR"));

  if (::geteuid() != 0) GTEST_SKIP() << "netbox launch needs root";
  auto launch = run_netbox({"launch", "--policy", policy, "--audit-db", (tmp.path() / "b.db").string(), "--", "true"});
  EXPECT_EQ(launch.exit_code, 2) << launch.err;
  EXPECT_THAT(launch.err, HasSubstr("--policy: "));
  EXPECT_THAT(launch.err, HasSubstr("inspect: TLS inspection"));
  EXPECT_THAT(launch.err, ::testing::Not(HasSubstr("runs as"))) << "refused before the agent's banner";
}

TEST(InspectionPolicy, ACaThatDoesNotLoadOrAnUpstreamCaWithoutOneStopsTheProxyWithExit2) {
  netbox::test::TempDir tmp;
  const auto policy = tmp.write("policy.json", kPolicy).string();
  const auto db = (tmp.path() / "a.db").string();
  auto missing = run_netbox({"proxy", "--policy", policy, "--listen", "127.0.0.1:0", "--audit-db", db, "--ca-dir",
                             (tmp.path() / "no-ca").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--ca-dir " + (tmp.path() / "no-ca").string()));

  auto lone = run_netbox({"proxy", "--policy", policy, "--listen", "127.0.0.1:0", "--audit-db", db, "--upstream-ca",
                          (tmp.path() / "x.pem").string()});
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_THAT(lone.err, HasSubstr("--upstream-ca needs --ca-dir"));
}

TEST(InspectionPolicy, LaunchLoadsItsCaBeforeAnythingRunsAndKeepsItForTheEmbeddedProxy) {
  if (::geteuid() != 0) GTEST_SKIP() << "netbox launch needs root";
  netbox::test::TempDir tmp;
  const auto policy = tmp.write("policy.json", kPolicy).string();
  auto missing = run_netbox({"launch", "--policy", policy, "--audit-db", (tmp.path() / "b.db").string(), "--ca-dir",
                             (tmp.path() / "no-ca").string(), "--", "true"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("--ca-dir " + (tmp.path() / "no-ca").string()));

  auto with_control = run_netbox({"launch", "--control", (tmp.path() / "ctl.sock").string(), "--ca-dir",
                                  (tmp.path() / "no-ca").string(), "--", "true"});
  EXPECT_EQ(with_control.exit_code, 2) << with_control.err;
  EXPECT_THAT(with_control.err, HasSubstr("--ca-dir: only for the embedded proxy"));
}

TEST(InspectionPolicy, CredentialsAreStillRefusedByTheProxy) {
  netbox::test::TempDir tmp;
  const auto policy = tmp.write("policy.json", R"({"version": 1, "allow": ["api.openai.com"],
    "inspect": ["api.openai.com"], "credentials": [{"name": "openai", "hosts": ["api.openai.com"],
    "header": "Authorization", "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}]})").string();
  netbox::tls::CertificateAuthority::create(tmp.path() / "ca");
  auto proxy = run_netbox({"proxy", "--policy", policy, "--listen", "127.0.0.1:0", "--audit-db",
                           (tmp.path() / "a.db").string(), "--ca-dir", (tmp.path() / "ca").string()});
  EXPECT_EQ(proxy.exit_code, 2);
  EXPECT_THAT(proxy.err, HasSubstr("credentials: TLS inspection's credentials are not enforced"));
}

}  // namespace
