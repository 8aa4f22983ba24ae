// `netbox policy check`: exit 0 and a summary for a good file; exit 2 and
// FILE:LINE:COL: /json/path: what is wrong for every bad case the issue lists.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using netbox::test::run_netbox;
using netbox::test::TempDir;

namespace {

struct BadCase {
  const char* name;
  const char* json;
  const char* where;  // "LINE:COL: /path" expected right after the file name
  const char* what;   // fragment of the explanation
};

// Each file spreads over lines so that the line number is checked, not just found.
const BadCase kBadCases[] = {
    {"bad_json", "{\n  \"version\": 1,\n  \"allow\": [\"a.example\" \"b.example\"]\n}\n", "3:35: ", "invalid JSON"},
    {"trailing_comma", "{\n  \"version\": 1,\n}\n", "3:1: ", "invalid JSON"},
    {"unknown_key", "{\n  \"version\": 1,\n  \"alow\": []\n}\n", "3:3: /alow: ", "unknown key 'alow'; did you mean 'allow'?"},
    {"unknown_limits_key", "{\n  \"version\": 1,\n  \"limits\": {\"max_conn\": 5}\n}\n", "3:14: /limits/max_conn: ",
     "unknown key 'max_conn'"},
    {"unknown_agent_key", "{\n  \"version\": 1,\n  \"agents\": {\"bot\": {\"allowed\": []}}\n}\n",
     "3:22: /agents/bot/allowed: ", "unknown key 'allowed'"},
    {"wrong_type", "{\n  \"version\": 1,\n  \"ports\": \"443\"\n}\n", "3:12: /ports: ", "must be an array, not a string"},
    {"wrong_item_type", "{\n  \"version\": 1,\n  \"allow\": [\"a.example\", 7]\n}\n", "3:26: /allow/1: ", "must be a string"},
    {"bad_cidr_host_bits", "{\n  \"version\": 1,\n  \"allow\": [\"10.1.2.3/8\"]\n}\n", "3:13: /allow/0: ",
     "host bits set"},
    {"bad_cidr_prefix", "{\n  \"version\": 1,\n  \"deny\": [\"192.168.0.0/40\"]\n}\n", "3:12: /deny/0: ",
     "prefix length 40 is out of range 0-32"},
    {"bad_internal_cidr", "{\n  \"version\": 1,\n  \"internal\": {\"allow\": [\"127.0.0.1/7\"]}\n}\n",
     "3:26: /internal/allow/0: ", "host bits set"},
    {"port_zero", "{\n  \"version\": 1,\n  \"ports\": [80, 0]\n}\n", "3:17: /ports/1: ", "port 0 is outside 1-65535"},
    {"port_too_big", "{\n  \"version\": 1,\n  \"ports\": [65536]\n}\n", "3:13: /ports/0: ", "port 65536 is outside 1-65535"},
    {"entry_port_too_big", "{\n  \"version\": 1,\n  \"allow\": [\"a.example:70000\"]\n}\n", "3:13: /allow/0: ",
     "port 70000 is outside 1-65535"},
    {"star_in_middle", "{\n  \"version\": 1,\n  \"allow\": [\"api.*.example.com\"]\n}\n", "3:13: /allow/0: ",
     "'*' may only stand at the start of a name"},
    {"bare_star", "{\n  \"version\": 1,\n  \"allow\": [\"ok.example\",\n            \"*\"]\n}\n", "4:13: /allow/1: ",
     "a bare '*' would allow every host"},
    {"empty_host", "{\n  \"version\": 1,\n  \"allow\": [\"\"]\n}\n", "3:13: /allow/0: ", "empty host"},
    {"empty_host_with_port", "{\n  \"version\": 1,\n  \"deny\": [\":443\"]\n}\n", "3:12: /deny/0: ", "empty host"},
    {"bad_version", "{\n  \"version\": 2\n}\n", "2:14: /version: ", "version must be 1"},
    {"missing_version", "{\n  \"allow\": []\n}\n", "1:1: /version: ", "missing"},
    {"bad_mode", "{\n  \"version\": 1,\n  \"mode\": \"audit\"\n}\n", "3:11: /mode: ", "\"enforce\" or \"report\""},
    {"pin_not_ip", "{\n  \"version\": 1,\n  \"resolve\": {\"a.test\": [\"localhost\"]}\n}\n", "3:26: /resolve/a.test/0: ",
     "resolve pins must be IP addresses"},
    {"limit_zero", "{\n  \"version\": 1,\n  \"limits\": {\"max_connections\": 0}\n}\n", "3:33: /limits/max_connections: ",
     "positive integer"},
    {"bad_idna", "{\n  \"version\": 1,\n  \"allow\": [\"xn--zz.example\"]\n}\n", "3:13: /allow/0: ", "internationalised"},
    {"bad_ip_literal", "{\n  \"version\": 1,\n  \"allow\": [\"1.2.3.256\"]\n}\n", "3:13: /allow/0: ", "IPv4"},
    // Budgets, rates and the guardian (issue 25 item 6).
    {"budget_zero", "{\n  \"version\": 1,\n  \"limits\": {\"bytes_up\": 0}\n}\n", "3:26: /limits/bytes_up: ",
     "a budget of 0 refuses everything"},
    {"budget_negative", "{\n  \"version\": 1,\n  \"limits\": {\"bytes_up\": \"-64M\"}\n}\n", "3:26: /limits/bytes_up: ",
     "must not be negative"},
    {"rate_without_burst", "{\n  \"version\": 1,\n  \"limits\": {\"requests_per_minute\": 60}\n}\n",
     "3:14: /limits/requests_per_minute: ", "needs a \"burst\""},
    {"unknown_trigger",
     "{\n  \"version\": 1,\n  \"guardian\": {\"rules\": [{\"on\": [\"reboot\"], \"action\": \"kill\"}]}\n}\n",
     "3:34: /guardian/rules/0/on/0: ", "guardian.rules[0] trigger \"reboot\", column 1: unknown event 'reboot'"},
    {"trigger_count_zero",
     "{\n  \"version\": 1,\n  \"guardian\": {\"rules\": [{\"on\": [\"denied >= 0 in 60s\"], \"action\": \"kill\"}]}\n}\n",
     "3:34: /guardian/rules/0/on/0: ", "column 11: the count must be at least 1"},
    {"unknown_action",
     "{\n  \"version\": 1,\n  \"guardian\": {\"rules\": [{\"on\": [\"denied\"], \"action\": \"stop\"}]}\n}\n",
     "3:55: /guardian/rules/0/action: ", "unknown action \"stop\""},
    {"webhook_not_http", "{\n  \"version\": 1,\n  \"guardian\": {\"webhook\": \"ftp://x/\"}\n}\n",
     "3:27: /guardian/webhook: ", "must be an http:// or https:// URL"},
    {"unknown_content_rule", "{\n  \"version\": 1,\n  \"guardian\": {\"content\": {\"jwt\": \"off\"}}\n}\n",
     "3:28: /guardian/content/jwt: ", "unknown key 'jwt'"},
};

}  // namespace

class PolicyCheckBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(PolicyCheckBad, ExitsTwoNamingFileLineColumnPathAndProblem) {
  const BadCase& c = GetParam();
  TempDir dir;
  auto file = dir.write(std::string(c.name) + ".json", c.json);
  auto r = run_netbox({"policy", "check", file.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::string want = file.string() + ":" + c.where;
  EXPECT_EQ(r.err.rfind(want, 0), 0U) << "wanted stderr to start with '" << want << "', got: " << r.err;
  EXPECT_NE(r.err.find(c.what), std::string::npos) << "wanted '" << c.what << "' in: " << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(EveryIssueCase, PolicyCheckBad, ::testing::ValuesIn(kBadCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PolicyCheck, GoodFileExitsZeroWithSummary) {
  TempDir dir;
  auto file = dir.write("good.json", R"({"version": 1, "allow": ["api.example.com", "*.pypi.org"], "ports": [443]})");
  auto r = run_netbox({"policy", "check", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(file.string() + ": ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("api.example.com, *.pypi.org"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sha256 "), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(PolicyCheck, ShippedExamplesAreValid) {
  for (const char* example : {"examples/demo-policy.json", "examples/agent-policy.json"}) {
    auto r = run_netbox({"policy", "check", (netbox::test::source_dir() / example).string()});
    EXPECT_EQ(r.exit_code, 0) << example << ": " << r.err;
  }
}

TEST(PolicyCheck, MissingFileExitsTwoNamingIt) {
  TempDir dir;
  auto file = dir.path() / "absent.json";
  auto r = run_netbox({"policy", "check", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
}

TEST(PolicyCheck, MissingFileArgumentIsAUsageError) {
  auto r = run_netbox({"policy", "check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("FILE"), std::string::npos) << r.err;
}

TEST(PolicyCheck, PolicyWithoutSubcommandIsAUsageError) {
  auto r = run_netbox({"policy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
}

TEST(PolicyCheck, ExplainsTheDecisionForAHost) {
  auto demo = (netbox::test::source_dir() / "examples/demo-policy.json").string();
  auto ok = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "18080"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("name: allow"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("address 127.0.0.1 (resolve pin): allow"), std::string::npos) << ok.out;

  auto blocked = run_netbox({"policy", "check", demo, "--host", "blocked.demo.netbox.test", "--port", "80"});
  EXPECT_EQ(blocked.exit_code, 0) << blocked.err;
  EXPECT_NE(blocked.out.find("name: deny"), std::string::npos) << blocked.out;
  EXPECT_NE(blocked.out.find("matches deny[0] blocked.demo.netbox.test"), std::string::npos) << blocked.out;

  auto meta = run_netbox({"policy", "check", demo, "--host", "169.254.169.254", "--port", "80"});
  EXPECT_NE(meta.out.find("is internal (cloud metadata) and not in internal.allow"), std::string::npos) << meta.out;

  auto port = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "22"});
  EXPECT_NE(port.out.find("port 22 is not in ports [80, 8080, 18080]"), std::string::npos) << port.out;

  auto addr = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "80", "--address", "10.0.0.5"});
  EXPECT_NE(addr.out.find("which is internal (RFC 1918)"), std::string::npos) << addr.out;
}

TEST(PolicyCheck, ExplainsForAnAgentProfile) {
  auto file = (netbox::test::source_dir() / "examples/agent-policy.json").string();
  auto r = run_netbox({"policy", "check", file, "--host", "api.anthropic.com", "--agent", "claude"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("agents.claude.allow[0] api.anthropic.com"), std::string::npos) << r.out;
  auto other = run_netbox({"policy", "check", file, "--host", "api.anthropic.com"});
  EXPECT_NE(other.out.find("name: deny"), std::string::npos) << other.out;
}

TEST(PolicyCheck, BadHostOrPortArgumentsExitTwo) {
  auto demo = (netbox::test::source_dir() / "examples/demo-policy.json").string();
  auto bad_host = run_netbox({"policy", "check", demo, "--host", "a b.example"});
  EXPECT_EQ(bad_host.exit_code, 2);
  EXPECT_NE(bad_host.err.find("--host 'a b.example'"), std::string::npos) << bad_host.err;
  auto bad_port = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "70000"});
  EXPECT_EQ(bad_port.exit_code, 2);
  EXPECT_NE(bad_port.err.find("--port"), std::string::npos) << bad_port.err;
  auto bad_addr = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--address", "nope"});
  EXPECT_EQ(bad_addr.exit_code, 2);
  EXPECT_NE(bad_addr.err.find("--address 'nope'"), std::string::npos) << bad_addr.err;
  auto port_alone = run_netbox({"policy", "check", demo, "--port", "80"});
  EXPECT_EQ(port_alone.exit_code, 2) << port_alone.err;
}

TEST(PolicyCheck, ReportsEveryMistakeInOneRun) {
  TempDir dir;
  auto file = dir.write("many.json", "{\n  \"version\": 1,\n  \"allow\": [\"a*b.example\"],\n  \"ports\": [0],\n"
                                     "  \"limitz\": {}\n}\n");
  auto r = run_netbox({"policy", "check", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* where : {":3:13: /allow/0: ", ":4:13: /ports/0: ", ":5:3: /limitz: "})
    EXPECT_NE(r.err.find(file.string() + where), std::string::npos) << "wanted '" << where << "' in: " << r.err;
}

TEST(PolicyCheck, ReadsThePolicyFromStandardInput) {
  auto ok = netbox::test::run({netbox::test::netbox_binary().string(), "policy", "check", "-", "--host", "a.example", "--expect", "allow"},
                              std::chrono::seconds(30), R"({"version": 1, "allow": ["a.example"]})");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("name: allow"), std::string::npos) << ok.out;
  auto bad = netbox::test::run({netbox::test::netbox_binary().string(), "policy", "check", "-"}, std::chrono::seconds(30), "{\"version\": 2}");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.rfind("<stdin>:1:13: /version: ", 0), 0U) << bad.err;
}

TEST(PolicyCheck, ExpectIsACiGateOnTheVerdict) {
  auto demo = (netbox::test::source_dir() / "examples/demo-policy.json").string();
  auto allowed = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "18080", "--expect", "allow"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  auto wrong = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "18080", "--expect", "deny"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("expected deny, but demo.netbox.test port 18080 is allow"), std::string::npos) << wrong.err;
  // A name that passes but whose address is internal is a deny, as the proxy decides.
  auto internal = run_netbox({"policy", "check", demo, "--host", "demo.netbox.test", "--port", "80", "--address",
                              "10.0.0.5", "--expect", "deny"});
  EXPECT_EQ(internal.exit_code, 0) << internal.out << internal.err;
  auto no_host = run_netbox({"policy", "check", demo, "--expect", "allow"});
  EXPECT_EQ(no_host.exit_code, 2) << no_host.err;
  auto bad_value = run_netbox({"policy", "check", demo, "--host", "a.example", "--expect", "maybe"});
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_NE(bad_value.err.find("--expect"), std::string::npos) << bad_value.err;
}

TEST(PolicyCheck, JsonOutputForGoodBadAndExplainedPolicies) {
  TempDir dir;
  auto good = dir.write("good.json", R"({"version": 1, "allow": ["a.example"], "resolve": {"a.example": ["10.1.2.3"]}})");
  auto g = run_netbox({"policy", "check", good.string(), "--format", "json"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  auto gj = nlohmann::json::parse(g.out);
  EXPECT_EQ(gj["ok"], true);
  EXPECT_EQ(gj["digest"].get<std::string>().size(), 64U);

  auto e = run_netbox({"policy", "check", good.string(), "--format", "json", "--host", "a.example"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  auto ej = nlohmann::json::parse(e.out)["decision"];
  EXPECT_EQ(ej["verdict"], "deny") << ej.dump(2);  // the pin is internal
  ASSERT_EQ(ej["steps"].size(), 2U) << ej.dump(2);
  EXPECT_EQ(ej["steps"][0]["verdict"], "allow");
  EXPECT_EQ(ej["steps"][1]["rule"], "internal");

  auto bad = dir.write("bad.json", "{\n  \"version\": 1,\n  \"ports\": [0, \"x\"]\n}\n");
  auto b = run_netbox({"policy", "check", bad.string(), "--format", "json"});
  EXPECT_EQ(b.exit_code, 2);
  auto bj = nlohmann::json::parse(b.out);
  EXPECT_EQ(bj["ok"], false);
  ASSERT_EQ(bj["errors"].size(), 2U) << bj.dump(2);
  EXPECT_EQ(bj["errors"][0]["path"], "/ports/0");
  EXPECT_EQ(bj["errors"][0]["line"], 3);
  EXPECT_EQ(bj["errors"][1]["path"], "/ports/1");
}

// Budgets, rates and the guardian are printed, per profile with --explain, and the digest
// the audit log records changes with them.
TEST(PolicyCheck, ShowsBudgetsAndGuardianAndExplainsEachProfile) {
  TempDir dir;
  const std::string text = R"({"version": 1,
    "limits": {"bytes_up": "64M", "requests_per_minute": 60, "burst": 10,
               "destinations": [{"host": "*.github.com", "bytes_up": "8M"}]},
    "guardian": {"rules": [{"on": ["denied >= 20 in 60s"], "action": "kill"}], "webhook": "http://127.0.0.1:9000/hook"},
    "agents": {"trial": {"guardian": {"content": {"secrets": "report"}}}}})";
  auto file = dir.write("g.json", text);
  auto r = run_netbox({"policy", "check", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("budgets:        bytes_up 64M, requests 60/min (burst 10), 1 destination"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("limits.destinations[0] *.github.com: bytes_up 8M"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("guardian:       guardian.rules[0] denied >= 20 in 60s -> kill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("content: secrets report"), std::string::npos) << r.out;  // agents.trial, merged
  EXPECT_EQ(r.out.find("top level (anonymous"), std::string::npos) << r.out;

  auto x = run_netbox({"policy", "check", file.string(), "--explain"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  const auto trial = x.out.find("agents.trial (overrides guardian)\n");
  ASSERT_NE(trial, std::string::npos) << x.out;
  EXPECT_NE(x.out.find("top level (anonymous, and agents without a profile)\n"), std::string::npos) << x.out;
  EXPECT_NE(x.out.find("content: secrets report (first 64K of a body), encoded_labels enforce", trial), std::string::npos)
      << x.out;
  EXPECT_NE(x.out.find("guardian.rules[0] denied >= 20 in 60s -> kill", trial), std::string::npos) << x.out;

  auto digest = [&](const std::string& name, const std::string& body) {
    auto j = run_netbox({"policy", "check", dir.write(name, body).string(), "--format", "json"});
    EXPECT_EQ(j.exit_code, 0) << j.err;
    return nlohmann::json::parse(j.out).value("digest", "");
  };
  std::string other = text;
  other.replace(other.find("\"64M\""), 5, "\"65M\"");
  EXPECT_NE(digest("a.json", text), digest("b.json", other));
}
