// plan_launch decides a launch without root and without creating anything: what a wrong
// plan would do (show netbox's files, hand a secret to the agent, take a bad flag) is
// caught here, before any namespace exists.
#include "netbox/launcher/launch_plan.hpp"

#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/launch.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kVar = "NETBOX_PLAN_TEST_KEY";
constexpr const char* kSecret = "sk-plan-test-0123456789abcdef";

// Whether the agent's view covers `path`: the file itself, or a folder above it.
bool covered(const HiddenPaths& h, const fs::path& path) {
  const std::string p = path.string();
  auto below = [&](const std::string& folder) { return p == folder || p.starts_with(folder + "/"); };
  for (const auto& f : h.files)
    if (f == p) return true;
  for (const auto& f : h.folders)
    if (below(f)) return true;
  for (const auto& s : h.shared)
    for (const auto& name : s.hidden_names)
      if (below((fs::path(s.folder) / name).string())) return true;
  return false;
}

// A project folder the agent writes, and beside it netbox's own: the policy (with a
// credential whose secret is in the launcher's environment) and the audit store.
struct PlanFixture : ::testing::Test {
  test::TempDir dir;
  fs::path work, own, policy;

  PlanFixture() {
    work = fs::canonical(dir.path()) / "project";
    own = fs::canonical(dir.path()) / "netbox";
    fs::create_directories(work);
    fs::create_directories(own);
    nlohmann::json j = {{"version", 1}, {"allow", {"allowed.test"}}, {"inspect", {"allowed.test"}}};
    j["credentials"] = nlohmann::json::parse(std::string(R"([{"name": "openai", "hosts": ["allowed.test"],
      "header": "Authorization", "format": "Bearer {secret}", "secret_env": ")") + kVar + "\"}]");
    policy = own / "policy.json";
    std::ofstream(policy) << j.dump();
    ::setenv(kVar, kSecret, 1);
  }
  ~PlanFixture() override { ::unsetenv(kVar); }

  LaunchOptions options() const {
    LaunchOptions o;
    o.policy_file = policy;
    o.audit_db = own / "audit.db";
    o.ca_dir = own / "ca";
    o.workdir = work.string();
    o.ro = {dir.path().string()};  // netbox's folder is in the view: only hiding keeps it out
    o.user = "nobody";
    o.name = "planned";
    o.command = {"/bin/true"};
    return o;
  }
};

// The exit status and message plan_launch refuses `o` with; 0 when it plans it.
std::pair<int, std::string> refusal(const LaunchOptions& o) {
  try {
    plan_launch(o);
  } catch (const LaunchError& e) {
    return {e.exit_code(), e.what()};
  }
  return {0, ""};
}

TEST_F(PlanFixture, NetboxFilesAreHiddenFromTheAgentsView) {
  const LaunchPlan p = plan_launch(options());
  EXPECT_TRUE(covered(p.child.hidden, own / "audit.db")) << "the audit store";
  EXPECT_TRUE(covered(p.child.hidden, own / "audit.db-wal"));
  EXPECT_TRUE(covered(p.child.hidden, policy)) << "the policy";
  EXPECT_TRUE(covered(p.child.hidden, own / "ca" / "ca.key")) << "the CA's key";
  EXPECT_FALSE(covered(p.child.hidden, work / "main.c")) << "the agent's own project";
  EXPECT_EQ(p.child.cwd, work.string());
  EXPECT_EQ(p.child.command, std::vector<std::string>{"/bin/true"});
  EXPECT_EQ(p.child.hostname, "planned");
}

TEST_F(PlanFixture, TheSecretStaysWithTheLauncherAndTheAgentGetsAPlaceholder) {
  LaunchOptions o = options();
  o.keep_env = {kVar};  // asked for by name: still the placeholder
  const LaunchPlan p = plan_launch(o);
  ASSERT_EQ(p.credentials.secrets.size(), 1u);
  EXPECT_FALSE(p.child.launcher_env.contains(kVar)) << "the child copies the launcher's environment from here";
  ASSERT_TRUE(p.child.placeholders.contains(kVar));
  const std::string placeholder = p.child.placeholders.at(kVar);
  EXPECT_THAT(placeholder, Not(HasSubstr(kSecret)));
  const auto env = agent_environment({p.child.launcher_env, p.child.keep_env, p.child.set_env, "http://127.0.0.1:3128",
                                      p.child.user.name, p.child.user.home, "", p.child.placeholders});
  for (const auto& e : env) EXPECT_THAT(e, Not(HasSubstr(kSecret))) << "the agent's environment";
  EXPECT_THAT(env, Contains(std::string(kVar) + "=" + placeholder));
  EXPECT_THAT(render_plan(p), Not(HasSubstr(kSecret))) << "--explain";
}

TEST_F(PlanFixture, ASecretCopiedUnderAnotherNameIsRefused) {
  LaunchOptions o = options();
  o.env = {std::string("SMUGGLED=") + kSecret};
  const auto [code, message] = refusal(o);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_THAT(message, AllOf(HasSubstr("SMUGGLED"), HasSubstr("openai"))) << message;
}

TEST_F(PlanFixture, APolicyTheAgentCouldRewriteIsRefused) {
  LaunchOptions o = options();
  o.audit_db = fs::canonical(dir.path()) / "store" / "audit.db";  // elsewhere: only the policy is at stake
  o.rw = {own.string()};
  const auto [code, message] = refusal(o);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_THAT(message, HasSubstr(policy.string())) << message;
}

TEST_F(PlanFixture, BadOptionsAreRefusedWithExit2NamingTheFlag) {
  struct Case {
    const char* flag;
    void (*apply)(LaunchOptions&);
  };
  const Case cases[] = {
      {"--mode 'learn'", [](LaunchOptions& o) { o.mode = "learn"; }},
      {"--network 'bridge'", [](LaunchOptions& o) { o.network = "bridge"; }},
      {"--timeout", [](LaunchOptions& o) { o.timeout_seconds = -1; }},
      {"--subnet '10.0.0.1'", [](LaunchOptions& o) { o.subnet = "10.0.0.1"; }},
      {"--tmp-size 'huge'", [](LaunchOptions& o) { o.tmp_size = "huge"; }},
      {"--upstream-ca", [](LaunchOptions& o) {
         o.policy_file.reset();  // the default policy: it inspects nothing
         o.ca_dir.reset();
         o.upstream_ca = "/etc/ssl/certs/ca-certificates.crt";
       }},
      {"--profile 'ghost'", [](LaunchOptions& o) { o.profile = "ghost"; }},
      {"--name", [](LaunchOptions& o) { o.name = "anonymous"; }},
      {"--name", [](LaunchOptions& o) { o.name = "agent\x1b[2J"; }},
      {"--env", [](LaunchOptions& o) { o.env = {"NOEQUALS"}; }},
      {"--audit-db postgresql://", [](LaunchOptions& o) { o.audit_db = "postgresql://db/netbox"; }},
      {"a command is required", [](LaunchOptions& o) { o.command.clear(); }},
  };
  for (const auto& c : cases) {
    LaunchOptions o = options();
    c.apply(o);
    const auto [code, message] = refusal(o);
    EXPECT_EQ(code, kExitUsage) << c.flag << ": " << message;
    EXPECT_THAT(message, HasSubstr(c.flag));
  }
  EXPECT_EQ(refusal(options()).first, 0) << refusal(options()).second;
}

TEST_F(PlanFixture, TheExplainedReportIsThePlansAndTheTransparentNetworkGetsTheDnsView) {
  LaunchOptions o = options();
  o.explain_format = "json";
  const LaunchPlan p = plan_launch(o);
  const auto report = nlohmann::json::parse(render_plan(p));
  EXPECT_EQ(report.dump(), nlohmann::json::parse(render_report_json(p.report)).dump());
  EXPECT_TRUE(p.child.dns_view);
  EXPECT_THAT(p.child.mounts.resolv_conf, HasSubstr("nameserver 127.0.0.53"));
  o.network = "proxy-vars";
  EXPECT_FALSE(plan_launch(o).child.dns_view);
  EXPECT_EQ(plan_launch(o).child.mounts.resolv_conf, "");
}

}  // namespace
}  // namespace netbox::launcher
