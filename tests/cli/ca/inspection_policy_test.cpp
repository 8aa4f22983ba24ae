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

// A credential's secret is read by the launcher before anything is created; one that is
// missing, or a file others may read, stops the launch with exit 2 naming the key.
TEST(InspectionPolicy, ALaunchStopsWithExit2NamingTheCredentialWhoseSecretIsMissingOrExposed) {
  if (::geteuid() != 0) GTEST_SKIP() << "netbox launch needs root";
  netbox::test::TempDir tmp;
  netbox::tls::CertificateAuthority::create(tmp.path() / "ca");
  const auto policy_with = [&](const std::string& name, const std::string& source) {
    return tmp.write(name, R"({"version": 1, "allow": ["api.openai.com"], "inspect": ["api.openai.com"],
      "agents": {"ci": {"credentials": [{"name": "openai", "hosts": ["api.openai.com"], "header": "Authorization",
      "format": "Bearer {secret}", )" + source + "}]}}}").string();
  };
  const auto launch = [&](const std::string& policy, std::vector<std::string> env) {
    std::vector<std::string> argv{"env"};
    for (auto& e : env) argv.push_back(e);
    for (const std::string& a : {netbox::test::netbox_binary().string(), std::string("launch"), std::string("--policy"),
                                policy, std::string("--profile"), std::string("ci"), std::string("--audit-db"),
                                (tmp.path() / "a.db").string(), std::string("--ca-dir"), (tmp.path() / "ca").string(),
                                std::string("--"), std::string("true")})
      argv.push_back(a);
    return netbox::test::run(argv);
  };

  const auto by_env = policy_with("env.json", R"("secret_env": "NETBOX_TEST_UNSET_KEY")");
  auto unset = launch(by_env, {"-u", "NETBOX_TEST_UNSET_KEY"});
  EXPECT_EQ(unset.exit_code, 2) << unset.err;
  EXPECT_THAT(unset.err, HasSubstr("agents.ci.credentials[0] (openai): secret_env NETBOX_TEST_UNSET_KEY is not set"));
  EXPECT_THAT(unset.err, ::testing::Not(HasSubstr("runs as"))) << "refused before the agent's banner";
  auto empty = launch(by_env, {"NETBOX_TEST_UNSET_KEY="});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_THAT(empty.err, HasSubstr("secret_env NETBOX_TEST_UNSET_KEY is not set in the launcher's environment (or is empty)"));

  // The secret copied into another of the agent's variables would enter the namespace.
  for (const std::string flag : {"--keep-env=NETBOX_TEST_COPY", "--env=OTHER=sk-test-env-secret"}) {
    auto copied = netbox::test::run({"env", "NETBOX_TEST_UNSET_KEY=sk-test-env-secret", "NETBOX_TEST_COPY=sk-test-env-secret",
                                     netbox::test::netbox_binary().string(), "launch", "--policy", by_env, "--profile",
                                     "ci", "--audit-db", (tmp.path() / "a.db").string(), "--ca-dir",
                                     (tmp.path() / "ca").string(), flag, "--", "true"});
    EXPECT_EQ(copied.exit_code, 2) << flag << copied.err;
    EXPECT_THAT(copied.err, HasSubstr("would hold the secret of credential openai (from --env or --keep-env)")) << flag;
    EXPECT_THAT(copied.err, ::testing::Not(HasSubstr("sk-test-env-secret")));
  }

  const auto secret = tmp.write("openai.key", "sk-test-file-secret\n");
  const auto by_file = policy_with("file.json", R"("secret_file": ")" + secret.string() + "\"");
  std::filesystem::permissions(secret, std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                           std::filesystem::perms::others_read);
  auto exposed = launch(by_file, {});
  EXPECT_EQ(exposed.exit_code, 2) << exposed.err;
  EXPECT_THAT(exposed.err, HasSubstr("agents.ci.credentials[0] (openai).secret_file " + secret.string() +
                                     ": is open to group or others (mode 444)"));
  EXPECT_THAT(exposed.err, ::testing::Not(HasSubstr("sk-test-file-secret")));

  const auto link = tmp.path() / "link.key";
  std::filesystem::create_symlink(secret, link);
  std::filesystem::permissions(secret, std::filesystem::perms::owner_read);
  auto linked = launch(policy_with("link.json", R"("secret_file": ")" + link.string() + "\""), {});
  EXPECT_EQ(linked.exit_code, 2) << linked.err;
  EXPECT_THAT(linked.err, HasSubstr(link.string() + ": is a symbolic link"));

  auto absent = launch(policy_with("absent.json", R"("secret_file": ")" + (tmp.path() / "none").string() + "\""), {});
  EXPECT_EQ(absent.exit_code, 2) << absent.err;
  EXPECT_THAT(absent.err, HasSubstr("(openai).secret_file " + (tmp.path() / "none").string() + ": cannot be read"));
}

// `policy check` names a mistake in a credential's `env` and says which variable holds
// the placeholder.
TEST(InspectionPolicy, CheckNamesABadEnvKeyOfACredentialAndSaysWhereThePlaceholderGoes) {
  netbox::test::TempDir tmp;
  const auto policy = tmp.write("policy.json", R"({"version": 1, "allow": ["api.openai.com"],
    "inspect": ["api.openai.com"], "credentials": [{"name": "openai", "hosts": ["api.openai.com"],
    "header": "Authorization", "format": "Bearer {secret}", "secret_file": "/etc/netbox/openai", "env": "A=B"}]})").string();
  auto check = run_netbox({"policy", "check", policy});
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_THAT(check.err, HasSubstr("/credentials/0/env: must be an environment variable name"));

  const auto good = tmp.write("good.json", R"({"version": 1, "allow": ["api.openai.com"],
    "inspect": ["api.openai.com"], "credentials": [{"name": "openai", "hosts": ["api.openai.com"],
    "header": "Authorization", "format": "Bearer {secret}", "secret_file": "/etc/netbox/openai", "env": "OPENAI_API_KEY"},
    {"name": "gh", "hosts": ["api.openai.com"], "header": "X-Key", "format": "{secret}", "secret_file": "/etc/netbox/gh"}]})").string();
  auto ok = run_netbox({"policy", "check", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("secret from /etc/netbox/openai, placeholder in $OPENAI_API_KEY"));
  EXPECT_THAT(ok.out, HasSubstr("secret from /etc/netbox/gh, no placeholder variable"));
}

}  // namespace
