// The TLS-inspection keys of a policy (inspect, rules, credentials): loading, the
// mistakes a security team could make in them, and the request decision they drive.
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/load.hpp"

#include <gmock/gmock.h>

namespace netbox::policy {
namespace {

using ::testing::HasSubstr;

const char* kGithub = R"({
  "version": 1,
  "allow": ["api.github.com", "*.openai.com", "example.com"],
  "inspect": ["api.github.com", "api.openai.com"],
  "rules": [
    {"host": "api.github.com", "methods": ["GET", "HEAD"], "paths": ["/repos/acme/*"], "action": "allow"},
    {"host": "api.github.com", "methods": ["POST"], "paths": ["/repos/acme/*/issues"], "action": "allow"},
    {"host": "api.github.com", "paths": ["/repos/acme/secret/*"], "action": "deny"},
    {"host": "*.openai.com", "action": "allow"}
  ],
  "credentials": [
    {"name": "openai", "hosts": ["api.openai.com"], "header": "Authorization", "format": "Bearer {secret}",
     "secret_env": "OPENAI_API_KEY"}
  ],
  "agents": {
    "reader": {"rules": [{"host": "api.github.com", "methods": ["GET"], "action": "allow"}]},
    "watcher": {"mode": "report"}
  }
})";

std::vector<std::string> problems(const std::string& json) {
  try {
    parse_policy(json, "p.json");
  } catch (const PolicyError& e) {
    std::vector<std::string> out;
    for (const auto& p : e.problems()) out.push_back(p.json_path + ": " + p.message);
    return out;
  }
  ADD_FAILURE() << "accepted: " << json;
  return {};
}

TEST(Inspection, TheKeysLoadAtTheTopAndPerAgent) {
  Policy p = parse_policy(kGithub, "p.json");
  ASSERT_EQ(p.base.inspect.size(), 2u);
  EXPECT_EQ(p.base.inspect[0].cite(), "inspect[0] api.github.com");
  ASSERT_EQ(p.base.rules.size(), 4u);
  EXPECT_EQ(p.base.rules[0].cite(), "rules[0] api.github.com GET,HEAD /repos/acme/*");
  ASSERT_EQ(p.base.credentials.size(), 1u);
  EXPECT_EQ(p.base.credentials[0].format, "Bearer {secret}");
  EXPECT_EQ(p.base.credentials[0].secret_env, "OPENAI_API_KEY");
  const Profile& reader = p.profile_for("reader");
  ASSERT_EQ(reader.rules.size(), 1u);
  EXPECT_EQ(reader.rules[0].cite(), "agents.reader.rules[0] api.github.com GET");
  EXPECT_EQ(reader.inspect.size(), 2u) << "what an agent does not name it inherits";
  EXPECT_THAT(reader.overrides, ::testing::ElementsAre("rules"));
  EXPECT_TRUE(inspects(p.base, "api.github.com", 443));
  EXPECT_FALSE(inspects(p.base, "example.com", 443));
}

TEST(Inspection, RulesDecideInOrderFirstMatchWinsAndANamedHostIsAnAllowList) {
  Policy p = parse_policy(kGithub, "p.json");
  const Profile& b = p.base;
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "GET", "/repos/acme/widget").verdict, Verdict::allow);
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "GET", "/repos/acme/widget").rule,
            "rules[0] api.github.com GET,HEAD /repos/acme/*");
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "POST", "/repos/acme/widget/issues").verdict, Verdict::allow);
  // POST elsewhere, or a method no rule names: nothing allows it.
  Decision push = match_rules(b, "api.github.com", 443, "POST", "/repos/acme/widget/git/refs");
  EXPECT_EQ(push.verdict, Verdict::deny);
  EXPECT_THAT(push.reason, HasSubstr("no entry of rules allows POST /repos/acme/widget/git/refs on api.github.com"));
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "DELETE", "/repos/acme/widget").verdict, Verdict::deny);
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "GET", "/repos/other/x").verdict, Verdict::deny);
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "GET", "/repos/acme").verdict, Verdict::deny);
  // The first match wins: GET of the secret repo is allowed by rules[0] before rules[2]
  // is reached; a HEAD too. Order is the author's to choose, and it is kept.
  EXPECT_EQ(match_rules(b, "api.github.com", 443, "GET", "/repos/acme/secret/x").rule,
            "rules[0] api.github.com GET,HEAD /repos/acme/*");
  Decision put = match_rules(b, "api.github.com", 443, "PUT", "/repos/acme/secret/x");
  EXPECT_EQ(put.verdict, Verdict::deny);
  EXPECT_EQ(put.rule, "rules[2] api.github.com /repos/acme/secret/*");
  EXPECT_THAT(put.reason, HasSubstr("PUT /repos/acme/secret/x on api.github.com is denied by rules[2]"));
  // A wildcard rule; and a host no rule names is left to the host decision.
  EXPECT_EQ(match_rules(b, "api.openai.com", 443, "POST", "/v1/chat").verdict, Verdict::allow);
  EXPECT_EQ(match_rules(b, "example.com", 443, "DELETE", "/anything").verdict, Verdict::allow);
  EXPECT_EQ(match_rules(b, "example.com", 443, "DELETE", "/anything").rule, "");
  // Per agent, and report mode reports instead of refusing.
  EXPECT_EQ(match_rules(p.profile_for("reader"), "api.github.com", 443, "GET", "/anything").verdict,
            Verdict::allow);
  EXPECT_EQ(match_rules(p.profile_for("reader"), "api.github.com", 443, "HEAD", "/").verdict, Verdict::deny);
  EXPECT_EQ(match_rules(p.profile_for("watcher"), "api.github.com", 443, "DELETE", "/x").verdict,
            Verdict::report);
}

TEST(Inspection, ARuleForAHostThatIsNotAllowedIsAMistake) {
  auto got = problems(R"({"version": 1, "allow": ["example.com"],
    "rules": [{"host": "api.github.com", "action": "allow"}, {"host": "*.example.com", "action": "allow"}]})");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_THAT(got[0], HasSubstr("rules[0] names api.github.com, which this profile's allow list does not allow"));
  EXPECT_THAT(got[1], HasSubstr("rules[1] names *.example.com"));
  // An agent that narrows allow under the top level's rules is caught at the agent.
  got = problems(R"({"version": 1, "allow": ["api.github.com"],
    "rules": [{"host": "api.github.com", "action": "allow"}],
    "agents": {"a": {"allow": ["example.com"]}}})");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("/agents/a: rules[0] names api.github.com"));
}

TEST(Inspection, ACredentialForAHostThatIsNotInspectedIsAMistake) {
  auto got = problems(R"({"version": 1, "allow": ["api.openai.com"],
    "credentials": [{"name": "openai", "hosts": ["api.openai.com"], "header": "Authorization",
                     "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}]})");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("credentials[0] (openai) names api.openai.com, which is not in inspect"));
}

TEST(Inspection, EveryMalformedEntryIsNamedAtOnce) {
  auto got = problems(R"({"version": 1, "allow": ["a.test"], "inspect": ["a.test", "10.0.0.0/8x"],
    "rules": [
      {"host": "a.test", "methods": ["get"], "paths": ["/a/../b", "/x%2Fy", "/q?x"], "action": "allow"},
      {"host": "10.0.0.0/8", "action": "maybe"},
      {"methods": [], "action": "allow"},
      {"host": "a.test", "verb": "GET", "action": "deny"}
    ],
    "credentials": [
      {"name": "Bad Name", "hosts": [], "header": "Auth orization", "format": "Bearer", "secret_env": "A",
       "secret_file": "/x"},
      {"name": "ok", "hosts": ["a.test"], "header": "X-Key", "format": "{secret}{secret}", "secret_file": "rel"}
    ]})");
  std::string all;
  for (const auto& line : got) all += line + "\n";
  for (const char* want : {"/inspect/1", "/rules/0/methods/0: \"get\" is not an HTTP method in upper case",
                           "/rules/0/paths/0: \"/a/../b\" is not in canonical form; write \"/b\"",
                           "/rules/0/paths/1: \"/x%2Fy\": an encoded slash", "/rules/0/paths/2",
                           "/rules/1/host: must be a host name or *.suffix", "/rules/1/action: action must be",
                           "/rules/2: a rule needs a \"host\"", "/rules/3/verb", "/credentials/0/name",
                           "/credentials/0/hosts: must name at least one host", "/credentials/0/header",
                           "/credentials/0/format: must hold {secret} exactly once",
                           "/credentials/0: a credential needs exactly one of", "/credentials/1/format",
                           "/credentials/1/secret_file: must be an absolute path"})
    EXPECT_THAT(all, HasSubstr(want));
  // Two credentials of one name: which placeholder is which would be ambiguous.
  got = problems(R"({"version": 1, "allow": ["a.test"], "inspect": ["a.test"], "credentials": [
      {"name": "k", "hosts": ["a.test"], "header": "X-Key", "format": "{secret}", "secret_env": "A"},
      {"name": "k", "hosts": ["a.test"], "header": "X-Key", "format": "{secret}", "secret_env": "B"}]})");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("/credentials/1/name: \"k\" is already the name of another credential"));
  // A line break in the format would let the secret's header split into two.
  got = problems(R"({"version": 1, "allow": ["a.test"], "inspect": ["a.test"], "credentials": [
      {"name": "k", "hosts": ["a.test"], "header": "X-Key", "format": "{secret}\r\nX-Evil: 1", "secret_env": "A"}]})");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], HasSubstr("must not hold a line break"));
}

}  // namespace
}  // namespace netbox::policy
