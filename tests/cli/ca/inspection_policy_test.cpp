// A policy with TLS inspection's keys: `policy check` validates it, while the proxy and
// an embedded launch refuse it (exit 2, naming the key) until they can enforce it.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

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
  EXPECT_THAT(proxy.err, HasSubstr("inspect: TLS inspection (inspect, credentials) is not enforced"));

  if (::geteuid() != 0) GTEST_SKIP() << "netbox launch needs root";
  auto launch = run_netbox({"launch", "--policy", policy, "--audit-db", (tmp.path() / "b.db").string(), "--", "true"});
  EXPECT_EQ(launch.exit_code, 2) << launch.err;
  EXPECT_THAT(launch.err, HasSubstr("--policy: "));
  EXPECT_THAT(launch.err, HasSubstr("inspect: TLS inspection"));
  EXPECT_THAT(launch.err, ::testing::Not(HasSubstr("runs as"))) << "refused before the agent's banner";
}

}  // namespace
