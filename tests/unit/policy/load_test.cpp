// Loading policy files: every bad case fails closed and says where and what.
#include "netbox/policy/load.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace netbox::policy;

namespace {

struct Failure {
  int line = 0;
  int column = 0;
  std::string path;
  std::string what;  // the full message
};

Failure fail_of(const std::string& json) {
  try {
    parse_policy(json, "p.json");
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.file(), "p.json");
    return Failure{e.line(), e.column(), e.json_path(), e.what()};
  }
  ADD_FAILURE() << "accepted: " << json;
  return {};
}

void expect_fail(const std::string& json, const std::string& path, const std::string& fragment) {
  auto f = fail_of(json);
  EXPECT_EQ(f.path, path) << f.what;
  EXPECT_NE(f.what.find(fragment), std::string::npos) << "wanted '" << fragment << "' in: " << f.what;
  EXPECT_GT(f.line, 0) << f.what;
  EXPECT_GT(f.column, 0) << f.what;
}

}  // namespace

TEST(Load, IssueExampleLoads) {
  auto p = parse_policy(R"({
    "version": 1,
    "mode": "enforce",
    "allow": ["api.example.com", "*.pypi.org", "files.example.com:443", "203.0.113.0/24"],
    "deny":  ["*.evil.example", "198.51.100.7"],
    "ports": [80, 443],
    "internal": { "allow": ["127.0.0.1/32"] },
    "resolve": { "api.example.test": ["127.0.0.1"] },
    "limits": { "max_connections": 1024, "max_connections_per_agent": 128,
                "max_connections_per_host": 64, "connect_timeout_ms": 10000,
                "idle_timeout_ms": 300000 },
    "agents": { "claude": { "allow": ["api.anthropic.com"], "limits": { "max_connections_per_host": 8 } } }
  })", "p.json");
  ASSERT_EQ(p.base.allow.size(), 4U);
  EXPECT_EQ(p.base.allow[0].kind, Rule::Kind::exact_host);
  EXPECT_EQ(p.base.allow[1].kind, Rule::Kind::wildcard_host);
  EXPECT_EQ(p.base.allow[1].host, "pypi.org");
  EXPECT_EQ(p.base.allow[2].port, uint16_t{443});
  EXPECT_EQ(p.base.allow[3].kind, Rule::Kind::network);
  EXPECT_EQ(p.base.deny[1].kind, Rule::Kind::network);
  EXPECT_EQ(p.base.deny[1].cite(), "deny[1] 198.51.100.7");
  EXPECT_EQ(p.pins.at("api.example.test").at(0).to_string(), "127.0.0.1");
  EXPECT_EQ(p.base.internal_allow_written, std::vector<std::string>{"127.0.0.1/32"});
  const Profile& c = p.profile_for("claude");
  EXPECT_EQ(c.allow.at(0).cite(), "agents.claude.allow[0] api.anthropic.com");
  EXPECT_EQ(c.deny.size(), 2U);  // inherited
  EXPECT_EQ(c.limits.max_connections_per_host, 8U);   // merged field by field
  EXPECT_EQ(c.limits.max_connections_per_agent, 128U);
  EXPECT_EQ(c.overrides, (std::vector<std::string>{"allow", "limits"}));
  EXPECT_EQ(&p.profile_for("anonymous"), &p.base);
  EXPECT_EQ(&p.profile_for("nobody"), &p.base);
}

TEST(Load, DefaultsWhenKeysAreMissing) {
  auto p = parse_policy(R"({"version": 1})", "p.json");
  EXPECT_EQ(p.base.mode, Mode::enforce);
  EXPECT_TRUE(p.base.allow.empty());
  EXPECT_EQ(p.base.ports, (std::vector<uint16_t>{80, 443}));
  EXPECT_EQ(p.base.limits.max_connections, 1024U);
  EXPECT_EQ(p.base.limits.max_connections_per_agent, 128U);
  EXPECT_EQ(p.base.limits.max_connections_per_host, 64U);
  EXPECT_EQ(p.base.limits.connect_timeout.count(), 10000);
  EXPECT_EQ(p.base.limits.idle_timeout.count(), 300000);
  EXPECT_EQ(p.base.limits.header_timeout.count(), 10000);
}

TEST(Load, HeaderTimeoutIsReadAndMergedPerAgent) {
  auto p = parse_policy(R"({"version": 1, "limits": {"header_timeout_ms": 2500},
                            "agents": {"a": {"limits": {"idle_timeout_ms": 7}}, "b": {"limits": {"header_timeout_ms": 9}}}})",
                        "p.json");
  EXPECT_EQ(p.base.limits.header_timeout.count(), 2500);
  EXPECT_EQ(p.profile_for("a").limits.header_timeout.count(), 2500);
  EXPECT_EQ(p.profile_for("b").limits.header_timeout.count(), 9);
  expect_fail(R"({"version": 1, "limits": {"header_timeout_ms": 0}})", "/limits/header_timeout_ms", "positive integer");
  expect_fail(R"({"version": 1, "limits": {"header_timeout_ms": "5s"}})", "/limits/header_timeout_ms", "positive integer");
}

// The limits' times also take netbox's one duration grammar, under the names without _ms.
TEST(Load, LimitTimesTakeTheDurationGrammar) {
  auto p = parse_policy(R"({"version": 1, "limits": {"idle_timeout": "1h30m", "connect_timeout": "1.5s",
                            "header_timeout": 20, "dial_budget": "500ms"}})",
                        "p.json");
  EXPECT_EQ(p.base.limits.idle_timeout, std::chrono::minutes(90));
  EXPECT_EQ(p.base.limits.connect_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(p.base.limits.header_timeout, std::chrono::seconds(20));
  EXPECT_EQ(p.base.limits.dial_budget, std::chrono::milliseconds(500));
  expect_fail(R"({"version": 1, "limits": {"idle_timeout": "1h2h"}})", "/limits/idle_timeout", "the unit h is given twice");
  expect_fail(R"({"version": 1, "limits": {"idle_timeout": "0s"}})", "/limits/idle_timeout", "longer than 0");
  expect_fail(R"({"version": 1, "limits": {"idle_timeout": "5m", "idle_timeout_ms": 5}})", "/limits/idle_timeout",
              "not both");
}

// "include" allows the hosts of a shipped set, as if listed under allow, in the profile
// that names it; an unknown set is named with the sets there are.
TEST(Load, IncludeAllowsAShippedHostSet) {
  const auto p = parse_policy(R"({"version": 1, "allow": ["example.com"], "include": ["@python"],
                                  "agents": {"coder": {"include": ["@npm"]}, "bare": {"allow": ["x.example"]}}})",
                              "p.json");
  const auto has = [](const Profile& profile, const std::string& host) {
    return std::any_of(profile.allow.begin(), profile.allow.end(), [&](const Rule& r) { return r.written == host; });
  };
  EXPECT_TRUE(has(p.base, "example.com"));
  EXPECT_TRUE(has(p.base, "pypi.org"));
  EXPECT_TRUE(has(p.base, "files.pythonhosted.org"));
  EXPECT_FALSE(has(p.base, "registry.npmjs.org"));
  EXPECT_TRUE(has(p.profile_for("coder"), "registry.npmjs.org"));
  EXPECT_TRUE(has(p.profile_for("coder"), "pypi.org")) << "an agent's include adds to the allow it inherits";
  EXPECT_FALSE(has(p.profile_for("bare"), "pypi.org")) << "an agent's own allow replaces the top level's";
  expect_fail(R"({"version": 1, "include": ["@pyton"]})", "/include/0", "no host set '@pyton' (did you mean @python?)");
  expect_fail(R"({"version": 1, "include": ["pypi.org"]})", "/include/0", "list hosts under allow");
}

// Every shipped set parses as allow entries (read_include relies on it).
TEST(Load, EveryShippedHostSetLoads) {
  for (const char* set : {"@anthropic", "@openai", "@gemini", "@python", "@npm", "@github", "@gitlab", "@crates", "@go"})
    EXPECT_NO_THROW(parse_policy(std::string(R"({"version": 1, "include": [")") + set + R"("]})", "p.json")) << set;
}

TEST(Load, DigestIsSha256OfTheBytes) {
  auto p = parse_policy("{\"version\": 1}\n", "p.json");
  // sha256sum of the same 15 bytes
  EXPECT_EQ(p.digest, "cedb60dfefb0ead1fa5a3ccb3c68e0ceaf4bb3415df80c79863092f362bd5ab9");
  EXPECT_NE(parse_policy("{\"version\": 1} \n", "p.json").digest, p.digest);
  // A reader that only looks into the policy asks for none; the policy is otherwise the same.
  const auto undigested = parse_policy("{\"version\": 1, \"allow\": [\"a.test\"]}\n", "p.json", Digest::skipped);
  EXPECT_EQ(undigested.digest, "");
  EXPECT_EQ(undigested.base.allow.size(), 1U);
  EXPECT_THROW(parse_policy("{\"version\": 2}", "p.json", Digest::skipped), PolicyError);
}

TEST(Load, BadJsonNamesLineAndColumn) {
  auto f = fail_of("{\n  \"version\": 1,\n  \"allow\": [\"a.example\",,]\n}");
  EXPECT_EQ(f.line, 3);
  EXPECT_EQ(f.column, 25);
  EXPECT_NE(f.what.find("p.json:3:25: invalid JSON"), std::string::npos) << f.what;
  auto trailing = fail_of("{\"version\": 1,}");
  EXPECT_EQ(trailing.line, 1);
  auto empty = fail_of("");
  EXPECT_EQ(empty.line, 1);
  EXPECT_NE(empty.what.find("invalid JSON"), std::string::npos);
  EXPECT_NE(fail_of("{\"version\": 1} /* unclosed").what.find("invalid JSON"), std::string::npos);
}

// JSON with comments: an entry can say why it is there, and a mistake after a comment is
// still named at its own line and column.
TEST(Load, CommentsAreAllowedAndMistakesKeepTheirPosition) {
  const auto p = parse_policy("// the agent's policy\n{\"version\": 1, /* block */\n"
                              " \"allow\": [\"a.example\", // why: its API\n \"b.example\"]}",
                              "p.json");
  EXPECT_EQ(p.base.allow.size(), 2U);
  auto f = fail_of("{\"version\": 1, // a comment with \"quotes\" and a ] bracket\n"
                   " /* and */ \"allow\": [\"a.example\", /* x */ \"x*y\"]}");
  EXPECT_EQ(f.path, "/allow/1") << f.what;
  EXPECT_EQ(f.line, 2) << f.what;
  EXPECT_EQ(f.column, 43) << f.what;
  auto twice = fail_of("{\"version\": 1, // once\n \"version\": 1}");
  EXPECT_EQ(twice.line, 2) << twice.what;
  EXPECT_NE(twice.what.find("appears twice"), std::string::npos) << twice.what;
}

TEST(Load, ColumnsCountCharactersNotBytes) {
  auto f = fail_of("{\"version\": 1, \"allow\": [\"bücher.example\", \"x*y\"]}");
  EXPECT_EQ(f.path, "/allow/1");
  EXPECT_EQ(f.line, 1);
  EXPECT_EQ(f.column, 44);  // 45 if bytes were counted
}

TEST(Load, SemanticErrorsCarryLineColumnAndPath) {
  auto f = fail_of("{\n  \"version\": 1,\n  \"allow\": [\n    \"ok.example\",\n    \"bad*.example\"\n  ]\n}");
  EXPECT_EQ(f.line, 5);
  EXPECT_EQ(f.column, 5);
  EXPECT_EQ(f.path, "/allow/1");
  EXPECT_NE(f.what.find("p.json:5:5: /allow/1: "), std::string::npos) << f.what;
}

TEST(Load, VersionMustBeOne) {
  expect_fail(R"({"allow": []})", "/version", "missing");
  expect_fail(R"({"version": 2})", "/version", "version must be 1");
  expect_fail(R"({"version": "1"})", "/version", "version must be 1");
  expect_fail(R"({"version": 1.0})", "/version", "version must be 1");
}

TEST(Load, RootMustBeAnObject) {
  auto f = fail_of("[1]");
  EXPECT_NE(f.what.find("must be a JSON object"), std::string::npos) << f.what;
}

TEST(Load, UnknownKeysAreRejectedAtEveryLevel) {
  expect_fail(R"({"version": 1, "allwo": []})", "/allwo", "unknown key 'allwo'; did you mean 'allow'?");
  expect_fail(R"({"version": 1, "frobnicate": 1})", "/frobnicate", "expected one of");
  expect_fail(R"({"version": 1, "limits": {"max_conns": 1}})", "/limits/max_conns", "unknown key 'max_conns'");
  expect_fail(R"({"version": 1, "internal": {"allowed": []}})", "/internal/allowed", "did you mean 'allow'");
  expect_fail(R"({"version": 1, "agents": {"a": {"alow": []}}})", "/agents/a/alow", "did you mean 'allow'");
  expect_fail(R"({"version": 1, "agents": {"a": {"limits": {"x": 1}}}})", "/agents/a/limits/x", "unknown key 'x'");
}

TEST(Load, UnknownKeyPointsAtTheKey) {
  auto f = fail_of("{\"version\": 1,\n   \"allwo\": []}");
  EXPECT_EQ(f.line, 2);
  EXPECT_EQ(f.column, 4);
}

TEST(Load, TopLevelOnlyKeysInAnAgentAreNamed) {
  expect_fail(R"({"version": 1, "agents": {"a": {"resolve": {}}}})", "/agents/a/resolve", "only allowed at the top level");
  expect_fail(R"({"version": 1, "agents": {"a": {"version": 1}}})", "/agents/a/version", "only allowed at the top level");
}

TEST(Load, DuplicateKeysAreRejected) {
  expect_fail(R"({"version": 1, "allow": ["a.example"], "allow": []})", "/allow", "appears twice");
}

TEST(Load, WrongTypesAreNamed) {
  expect_fail(R"({"version": 1, "allow": "a.example"})", "/allow", "must be an array, not a string");
  expect_fail(R"({"version": 1, "allow": [42]})", "/allow/0", "must be a string");
  expect_fail(R"({"version": 1, "deny": {}})", "/deny", "must be an array, not an object");
  expect_fail(R"({"version": 1, "ports": "443"})", "/ports", "must be an array");
  expect_fail(R"({"version": 1, "ports": ["443"]})", "/ports/0", "must be a port number (1-65535), not a string");
  expect_fail(R"({"version": 1, "ports": [443.5]})", "/ports/0", "not a floating-point number");
  expect_fail(R"({"version": 1, "internal": []})", "/internal", "must be an object");
  expect_fail(R"({"version": 1, "internal": {"allow": [true]}})", "/internal/allow/0", "must be a string, not a boolean");
  expect_fail(R"({"version": 1, "limits": []})", "/limits", "must be an object");
  expect_fail(R"({"version": 1, "mode": 1})", "/mode", "must be a string");
  expect_fail(R"({"version": 1, "resolve": []})", "/resolve", "must be an object");
  expect_fail(R"({"version": 1, "resolve": {"a.test": "127.0.0.1"}})", "/resolve/a.test", "must be an array");
  expect_fail(R"({"version": 1, "agents": []})", "/agents", "must be an object");
  expect_fail(R"({"version": 1, "agents": {"a": []}})", "/agents/a", "must be an object");
  expect_fail(R"({"version": 1, "$schema": 3})", "/$schema", "must be a string");
}

TEST(Load, ModeIsEnforceOrReport) {
  expect_fail(R"({"version": 1, "mode": "audit"})", "/mode", "\"enforce\" or \"report\"");
  EXPECT_EQ(parse_policy(R"({"version": 1, "mode": "report"})", "p").base.mode, Mode::report);
}

TEST(Load, BadCidrIsRejected) {
  expect_fail(R"({"version": 1, "allow": ["10.0.0.1/8"]})", "/allow/0", "host bits set");
  expect_fail(R"({"version": 1, "allow": ["10.0.0.1/8"]})", "/allow/0", "did you mean 10.0.0.0/8?");
  expect_fail(R"({"version": 1, "allow": ["10.0.0.0/33"]})", "/allow/0", "prefix length 33 is out of range 0-32");
  expect_fail(R"({"version": 1, "deny": ["fc00::/129"]})", "/deny/0", "out of range 0-128");
  expect_fail(R"({"version": 1, "allow": ["10.0.0.0/"]})", "/allow/0", "no prefix length");
  expect_fail(R"({"version": 1, "allow": ["300.0.0.0/8"]})", "/allow/0", "not an IP address");
  expect_fail(R"({"version": 1, "internal": {"allow": ["127.0.0.1/8"]}})", "/internal/allow/0", "host bits set");
  expect_fail(R"({"version": 1, "internal": {"allow": ["localhost"]}})", "/internal/allow/0", "not an IP address");
}

TEST(Load, PortsOutsideRangeAreRejected) {
  expect_fail(R"({"version": 1, "ports": [0]})", "/ports/0", "port 0 is outside 1-65535");
  expect_fail(R"({"version": 1, "ports": [80, 65536]})", "/ports/1", "port 65536 is outside 1-65535");
  expect_fail(R"({"version": 1, "ports": [-1]})", "/ports/0", "port -1 is outside 1-65535");
  expect_fail(R"({"version": 1, "ports": [99999999999999999999]})", "/ports/0", "");
  expect_fail(R"({"version": 1, "allow": ["a.example:0"]})", "/allow/0", "port 0 is outside 1-65535");
  expect_fail(R"({"version": 1, "allow": ["a.example:65536"]})", "/allow/0", "port 65536 is outside 1-65535");
  expect_fail(R"({"version": 1, "allow": ["a.example:"]})", "/allow/0", "port after ':' is missing");
  expect_fail(R"({"version": 1, "allow": ["a.example:https"]})", "/allow/0", "port 'https' is not a number");
  expect_fail(R"({"version": 1, "deny": ["[::1]:99999"]})", "/deny/0", "outside 1-65535");
}

TEST(Load, WildcardOnlyAsLeadingLabel) {
  expect_fail(R"({"version": 1, "allow": ["api.*.example.com"]})", "/allow/0", "'*' may only stand at the start of a name");
  expect_fail(R"({"version": 1, "allow": ["*example.com"]})", "/allow/0", "'*' may only stand at the start");
  expect_fail(R"({"version": 1, "allow": ["*.*.example.com"]})", "/allow/0", "'*' may only stand at the start");
  expect_fail(R"({"version": 1, "deny": ["example.*"]})", "/deny/0", "'*' may only stand at the start");
  expect_fail(R"({"version": 1, "allow": ["*."]})", "/allow/0", "must be followed by a domain name");
  expect_fail(R"({"version": 1, "allow": ["*.10.0.0.1"]})", "/allow/0", "not an address");
}

TEST(Load, BareStarIsRejected) {
  expect_fail(R"({"version": 1, "allow": ["*"]})", "/allow/0", "a bare '*' would allow every host");
  expect_fail(R"({"version": 1, "allow": ["*:443"]})", "/allow/0", "a bare '*' would allow every host");
  expect_fail(R"({"version": 1, "deny": ["*"]})", "/deny/0", "a bare '*' is not a host");
}

TEST(Load, EmptyHostIsRejected) {
  expect_fail(R"({"version": 1, "allow": [""]})", "/allow/0", "empty host");
  expect_fail(R"({"version": 1, "allow": [":443"]})", "/allow/0", "empty host");
  expect_fail(R"({"version": 1, "deny": ["."]})", "/deny/0", "empty");
}

TEST(Load, BadHostsAreRejected) {
  expect_fail(R"({"version": 1, "allow": ["xn--zz.example"]})", "/allow/0", "internationalised");
  expect_fail(R"({"version": 1, "allow": ["1.2.3.256"]})", "/allow/0", "not a valid one");
  expect_fail(R"({"version": 1, "allow": ["fe80::1%eth0"]})", "/allow/0", "'%'");
  expect_fail(R"({"version": 1, "allow": ["a b.example"]})", "/allow/0", "space");
  expect_fail(R"({"version": 1, "allow": ["https://example.com"]})", "/allow/0", "is a URL");
  expect_fail(R"({"version": 1, "allow": ["[::1"]})", "/allow/0", "closing ']'");
}

TEST(Load, NumericHostEntriesAreTheAddressesTheyMean) {
  auto p = parse_policy(R"({"version": 1, "deny": ["0x7f.1", "[::1]:8080"]})", "p");
  EXPECT_EQ(p.base.deny[0].kind, Rule::Kind::network);
  EXPECT_EQ(p.base.deny[0].network.to_string(), "127.0.0.1/32");
  EXPECT_EQ(p.base.deny[1].network.to_string(), "::1/128");
  EXPECT_EQ(p.base.deny[1].port, uint16_t{8080});
}

TEST(Load, ResolvePinsMustBeAddressesForNames) {
  expect_fail(R"({"version": 1, "resolve": {"a.test": ["localhost"]}})", "/resolve/a.test/0",
              "resolve pins must be IP addresses");
  expect_fail(R"({"version": 1, "resolve": {"a.test": ["127.1"]}})", "/resolve/a.test/0", "must be IP addresses");
  expect_fail(R"({"version": 1, "resolve": {"a.test": []}})", "/resolve/a.test", "at least one");
  expect_fail(R"({"version": 1, "resolve": {"10.0.0.1": ["10.0.0.1"]}})", "/resolve/10.0.0.1", "only names can be pinned");
  expect_fail(R"({"version": 1, "resolve": {"*.a.test": ["10.0.0.1"]}})", "/resolve/*.a.test", "'*'");
  expect_fail(R"({"version": 1, "resolve": {"A.test": ["10.0.0.1"], "a.test.": ["10.0.0.2"]}})", "/resolve/a.test.",
              "pinned twice");
  auto p = parse_policy(R"({"version": 1, "resolve": {"Demo.Test.": ["127.0.0.1", "::1"]}})", "p");
  EXPECT_EQ(p.pins.at("demo.test").size(), 2U);
}

TEST(Load, LimitsArePositiveIntegers) {
  expect_fail(R"({"version": 1, "limits": {"max_connections": 0}})", "/limits/max_connections", "positive integer");
  expect_fail(R"({"version": 1, "limits": {"max_connections": -5}})", "/limits/max_connections", "positive integer");
  expect_fail(R"({"version": 1, "limits": {"idle_timeout_ms": 1.5}})", "/limits/idle_timeout_ms", "positive integer");
  expect_fail(R"({"version": 1, "limits": {"connect_timeout_ms": "10"}})", "/limits/connect_timeout_ms", "positive integer");
  expect_fail(R"({"version": 1, "limits": {"max_connections_per_host": 1e20}})", "/limits/max_connections_per_host", "");
  expect_fail(R"({"version": 1, "limits": {"max_connections_per_agent": 99999999999}})", "/limits/max_connections_per_agent",
              "at most");
}

TEST(Load, AgentNamesAreChecked) {
  expect_fail(R"({"version": 1, "agents": {"bad name": {}}})", "/agents/bad name", "agent name 'bad name'");
  expect_fail(R"({"version": 1, "agents": {"": {}}})", "/agents/", "agent name");
  expect_fail(R"({"version": 1, "agents": {"anonymous": {}}})", "/agents/anonymous", "reserved");
}

TEST(Load, AgentErrorsUseTheAgentPath) {
  expect_fail(R"({"version": 1, "agents": {"bot": {"allow": ["*"]}}})", "/agents/bot/allow/0", "bare '*'");
  expect_fail(R"({"version": 1, "agents": {"bot": {"ports": [0]}}})", "/agents/bot/ports/0", "outside");
  expect_fail(R"({"version": 1, "agents": {"bot": {"mode": "x"}}})", "/agents/bot/mode", "enforce");
  expect_fail(R"({"version": 1, "agents": {"bot": {"internal": {"allow": ["10.0.0.1/8"]}}}})",
              "/agents/bot/internal/allow/0", "host bits");
}

TEST(Load, PathsEscapeSlashAndTilde) {
  expect_fail(R"({"version": 1, "agents": {"a": {"x/y~z": 1}}})", "/agents/a/x~1y~0z", "unknown key");
}

TEST(Load, DeepNestingIsRefusedNotCrashed) {
  std::string deep = "{\"version\": 1, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto f = fail_of(deep);
  EXPECT_NE(f.what.find("nesting"), std::string::npos) << f.what.substr(0, 200);
}

TEST(Load, FileErrorsNameTheFile) {
  netbox::test::TempDir dir;
  auto missing = dir.path() / "nope.json";
  try {
    load_policy_file(missing);
    FAIL() << "missing file loaded";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.file(), missing.string());
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_policy_file(dir.path()), PolicyError);
  auto bad = dir.write("bad.json", "{\"version\": 1, \"ports\": [0]}");
  try {
    load_policy_file(bad);
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() + ":1:26: /ports/0: port 0 is outside 1-65535");
  }
  auto good = dir.write("good.json", "{\"version\": 1, \"allow\": [\"a.example\"]}");
  auto p = load_policy_file(good);
  EXPECT_EQ(p.source, good.string());
  EXPECT_EQ(p.base.allow.size(), 1U);
}

TEST(Load, SummaryNamesWhatThePolicyDoes) {
  auto p = parse_policy(R"({"version": 1, "allow": ["a.example", "*.b.example"], "ports": [443],
                            "resolve": {"a.example": ["127.0.0.1"]}, "internal": {"allow": ["127.0.0.1/32"]},
                            "agents": {"bot": {"ports": [8443]}}})", "p.json");
  std::string s = summarize(p);
  for (const char* want : {"p.json: ok", "sha256 " , "mode:           enforce", "2 entries: a.example, *.b.example",
                           "ports:          443", "a.example -> 127.0.0.1", "127.0.0.1/32", "bot (overrides ports)"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing '" << want << "' in\n" << s;
  EXPECT_NE(s.find(p.digest), std::string::npos);
}

TEST(Load, DefaultPolicyIsEmbedded) {
  auto p = default_policy();
  EXPECT_EQ(p.source, "<embedded>");
  EXPECT_EQ(p.digest.size(), 64U);
}

TEST(Load, ByteOrderMarkAndCrlfKeepPositionsRight) {
  auto f = fail_of("\xEF\xBB\xBF{\r\n  \"version\": 1,\r\n  \"ports\": [0]\r\n}\r\n");
  EXPECT_EQ(f.path, "/ports/0");
  EXPECT_EQ(f.line, 3);
  EXPECT_EQ(f.column, 13);
  auto first = fail_of("\xEF\xBB\xBF{\"version\": 1, \"ports\": [0]}");
  EXPECT_EQ(first.column, 26);  // the mark takes no column
}

TEST(Load, EscapedKeysAreReportedDecoded) {
  expect_fail(R"({"version": 1, "agents": {"b\u006ft": {"ports": [0]}}})", "/agents/bot/ports/0", "outside");
}

// Found by fuzz_policy_json: nlohmann throws out_of_range (not parse_error) for a number
// beyond a double, which escaped parse_policy and aborted `netbox policy check`.
TEST(Load, NumberTooLargeForADoubleIsAPolicyError) {
  auto f = fail_of("{\"version\": 1,\n \"limits\": {\"idle_timeout_ms\": 1e400}}");
  EXPECT_NE(f.what.find("p.json:2:32: invalid JSON: number overflow parsing '1e400'"), std::string::npos) << f.what;
  EXPECT_NE(fail_of("[-1e999999]").what.find("invalid JSON"), std::string::npos);
}

TEST(Load, EveryMistakeIsReportedAtOnceInFileOrder) {
  const std::string json = R"({
  "version": 1,
  "allow": ["ok.example", "bad*name.example", 42],
  "ports": [443, 70000],
  "limits": {"max_connections": 0},
  "agents": {"a b": {}, "fine": {"mode": "loud"}},
  "colour": "blue"
})";
  try {
    parse_policy(json, "p.json");
    FAIL() << "accepted";
  } catch (const PolicyError& e) {
    std::vector<std::string> paths;
    for (const auto& p : e.problems()) paths.push_back(p.json_path);
    EXPECT_EQ(paths, (std::vector<std::string>{"/allow/1", "/allow/2", "/ports/1", "/limits/max_connections",
                                               "/agents/a b", "/agents/fine/mode", "/colour"}))
        << e.what();
    // what() has one FILE:LINE:COL line per mistake; the accessors are the first one's.
    const std::string what = e.what();
    EXPECT_EQ(std::count(what.begin(), what.end(), '\n'), 6) << what;
    EXPECT_EQ(e.json_path(), "/allow/1");
    EXPECT_EQ(e.line(), 3);
    for (const auto& p : e.problems()) EXPECT_GT(p.line, 0) << p.text();
  }
}

TEST(Load, AFileWithOneMistakeStillLoadsNothing) {
  // Keeping going after a mistake must never hand back a half-read policy.
  EXPECT_THROW(parse_policy(R"({"version": 1, "allow": ["ok.example", "*bad*"]})", "p.json"), PolicyError);
}

TEST(Load, SandboxKeysAreKeptAsWrittenAndAgentsReplaceThemKeyByKey) {
  auto p = parse_policy(R"({"version": 1,
    "sandbox": {"workdir": "/srv/work", "ro": ["/opt/tools"], "memory": "2G", "pids": 256, "cpus": 1.5,
                "tmp_size": "256M", "user": "builder", "allow_degraded": ["cgroup"]},
    "agents": {"small": {"sandbox": {"memory": "64M", "pids": "32", "hide": ["/srv/work/.env"]}},
               "plain": {"ports": [443]}}})", "p.json");
  const SandboxSettings& top = p.base.sandbox;
  EXPECT_EQ(top.workdir, "/srv/work");
  EXPECT_EQ(top.ro, std::vector<std::string>{"/opt/tools"});
  EXPECT_EQ(top.memory, "2G");
  EXPECT_EQ(top.pids, "256");
  EXPECT_EQ(top.cpus, "1.5");
  EXPECT_EQ(top.tmp_size, "256M");
  EXPECT_EQ(top.user, "builder");
  EXPECT_EQ(top.allow_degraded, std::vector<std::string>{"cgroup"});
  EXPECT_FALSE(top.rw);
  EXPECT_FALSE(top.workdir_quota);
  const SandboxSettings& small = p.agents.at("small").sandbox;
  EXPECT_EQ(small.memory, "64M");
  EXPECT_EQ(small.pids, "32");
  EXPECT_EQ(small.hide, std::vector<std::string>{"/srv/work/.env"});
  EXPECT_EQ(small.workdir, "/srv/work") << "keys the agent does not name stay the top level's";
  EXPECT_EQ(small.cpus, "1.5");
  EXPECT_EQ(p.agents.at("plain").sandbox.memory, "2G");
  const std::string s = summarize(p);
  for (const char* want : {"sandbox:        user builder, workdir /srv/work, ro /opt/tools, tmp-size 256M, memory 2G, "
                           "cpus 1.5, pids 256, allow-degraded cgroup",
                           "small (overrides sandbox)", "agents.small.sandbox: user builder, workdir /srv/work",
                           "memory 64M, cpus 1.5, pids 32"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing '" << want << "' in\n" << s;
  EXPECT_EQ(s.find("agents.plain.sandbox"), std::string::npos) << s;
  EXPECT_NE(summarize(default_policy()).find("sandbox:        (none"), std::string::npos);
}

TEST(Load, SandboxValuesAreCheckedWithTheFlagsGrammar) {
  expect_fail(R"({"version": 1, "sandbox": {"memory": "64X"}})", "/sandbox/memory",
              R"(p.json:1:38: /sandbox/memory: must be a size such as 512M or 4G or "unlimited", not "64X")");
  expect_fail(R"({"version": 1, "sandbox": {"memory": true}})", "/sandbox/memory", "not a boolean");
  expect_fail(R"({"version": 1, "sandbox": {"tmp_size": "unlimited"}})", "/sandbox/tmp_size", "512M or 4G, not");
  expect_fail(R"({"version": 1, "sandbox": {"workdir_quota": "0"}})", "/sandbox/workdir_quota", "a size");
  expect_fail(R"({"version": 1, "sandbox": {"pids": 0}})", "/sandbox/pids", "positive whole number");
  expect_fail(R"({"version": 1, "sandbox": {"pids": "many"}})", "/sandbox/pids", "positive whole number");
  expect_fail(R"({"version": 1, "sandbox": {"cpus": 0}})", "/sandbox/cpus", "at least 0.01");
  expect_fail(R"({"version": 1, "sandbox": {"cpus": "half"}})", "/sandbox/cpus", "number of CPUs");
  expect_fail(R"({"version": 1, "sandbox": {"workdir": "work"}})", "/sandbox/workdir", "absolute path");
  expect_fail(R"({"version": 1, "sandbox": {"ro": "/opt"}})", "/sandbox/ro", "must be an array");
  expect_fail(R"({"version": 1, "sandbox": {"rw": ["/ok", "rel"]}})", "/sandbox/rw/1", "absolute path");
  expect_fail(R"({"version": 1, "sandbox": {"user": ""}})", "/sandbox/user", "must name a user");
  expect_fail(R"({"version": 1, "sandbox": {"allow_degraded": ["network"]}})", "/sandbox/allow_degraded/0",
              "no layer");
  expect_fail(R"({"version": 1, "sandbox": {"network": "none"}})", "/sandbox/network",
              "must be \"transparent\" or \"proxy-vars\", not \"none\"");
  EXPECT_EQ(parse_policy(R"({"version": 1, "sandbox": {"network": "proxy-vars"}})", "p.json").base.sandbox.network,
            "proxy-vars");
  expect_fail(R"({"version": 1, "sandbox": []})", "/sandbox", "must be an object");
  expect_fail(R"({"version": 1,
  "agents": {"bot": {"sandbox": {"memory": "lots"}}}})", "/agents/bot/sandbox/memory",
              "p.json:2:44: /agents/bot/sandbox/memory: must be a size");
}
