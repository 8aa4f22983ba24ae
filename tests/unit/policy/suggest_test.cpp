// `netbox policy suggest`'s proposal (issue 27 item 2): what it allows, inspects and
// rules, and that the policy loader accepts it and decides the seen requests with it.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/load.hpp"
#include "netbox/policy/suggest.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace netbox::policy {
namespace {

TEST(Suggest, PathPatternsKeepTwoSegments) {
  EXPECT_EQ(suggested_path_pattern("/"), "/");
  EXPECT_EQ(suggested_path_pattern("/v1"), "/v1");
  EXPECT_EQ(suggested_path_pattern("/v1/messages"), "/v1/messages");
  EXPECT_EQ(suggested_path_pattern("/v1/messages/"), "/v1/messages/");
  EXPECT_EQ(suggested_path_pattern("/repos/acme/x/pulls"), "/repos/acme/*");
  EXPECT_EQ(suggested_path_pattern(""), "/");
}

TEST(Suggest, AllowsInspectsAndRulesWhatWasLetThroughAndNothingRefused) {
  SuggestInput in;
  in.agent = "trial";
  in.source = "test.db";
  in.rows = {
      {"connect", "api.github.com", 443, "", "", "allow", "", false, 1},
      {"http", "api.github.com", 443, "GET", "/repos/acme/w/pulls", "report", "rules", true, 3},
      {"http", "api.github.com", 443, "POST", "/repos/acme/w/issues", "allow", "rules[0]", true, 1},
      {"http", "pypi.org", 80, "GET", "/simple/x", "report", "", false, 2},
      {"connect", "10.0.0.5", 22, "", "", "report", "ports", false, 1},
      {"http", "metadata.test", 80, "GET", "/latest", "deny", "internal", false, 1},
      {"dns", "pypi.org", 53, "", "", "allow", "", false, 1},
  };
  const std::string text = suggest_policy(in);
  EXPECT_NE(text.find("//   rule api.github.com:443 GET,POST /repos/acme/*: 1 allowed, 3 reported (rules)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("not suggested, refused 1x: metadata.test:80 (deny, internal)"), std::string::npos) << text;
  const Policy p = parse_policy(text, "suggested");
  auto name = [&](const char* h, std::uint16_t port) { return decide_name(p.base, *parse_host(h).host, port).verdict; };
  EXPECT_EQ(name("pypi.org", 80), Verdict::allow);
  EXPECT_EQ(name("pypi.org", 443), Verdict::deny) << "only the port seen";
  std::vector<std::string> allowed;
  for (const auto& r : p.base.allow) allowed.push_back(r.written);
  EXPECT_EQ(allowed, (std::vector<std::string>{"10.0.0.5:22", "api.github.com:443", "pypi.org:80"}))
      << "nothing refused, no DNS lookup";
  EXPECT_TRUE(inspects(p.base, "api.github.com", 443));
  EXPECT_EQ(p.base.rules.size(), 1u);
  EXPECT_EQ(p.base.mode, Mode::enforce);
}

// An agent that puts '*' in its path (legal in a URL, stored as sent) must not get a rule
// whose pattern reads it as a wildcard: POST /* would allow every POST on the host.
TEST(Suggest, AStarInASeenPathIsNeverAPatternsWildcard) {
  SuggestInput in;
  in.agent = "trial";
  in.source = "test.db";
  in.rows = {
      {"connect", "api.github.com", 443, "", "", "allow", "", false, 1},
      {"http", "api.github.com", 443, "POST", "/*", "report", "rules", true, 1},
      {"http", "api.github.com", 443, "POST", "/a/*/b/c", "report", "rules", true, 1},
      {"http", "api.github.com", 443, "GET", "/repos/acme", "report", "rules", true, 1},
  };
  const std::string text = suggest_policy(in);
  EXPECT_NE(text.find("not suggested, 1x: api.github.com:443 POST /*"), std::string::npos) << text;
  const Policy p = parse_policy(text, "suggested");
  const Decision host{Verdict::allow, "allow[0] api.github.com:443", ""};
  const Admitted at{"api.github.com", 443, host};
  EXPECT_FALSE(decide_request(p.base, at, "GET", "/repos/acme").refused()) << text;
  EXPECT_TRUE(decide_request(p.base, at, "POST", "/gists").refused()) << text;
  EXPECT_TRUE(decide_request(p.base, at, "POST", "/a/x/b/c").refused()) << text;
}

TEST(Suggest, WithTheRunsPolicyAddsToTheAgentsEntryAndDropsReportMode) {
  SuggestInput in;
  in.agent = "trial";
  in.source = "test.db";
  in.base = std::pair{std::string(R"({"version": 1, "mode": "report", "resolve": {"a.test": ["203.0.113.1"]},
    "agents": {"trial": {"mode": "report", "allow": ["a.test"]}}})"), std::string("run.json")};
  in.rows = {{"http", "a.test", 80, "GET", "/", "allow", "agents.trial.allow[0] a.test", false, 1},
             {"http", "b.test", 8080, "GET", "/", "report", "", false, 1}};
  const Policy p = parse_policy(suggest_policy(in), "suggested");
  EXPECT_EQ(p.base.mode, Mode::enforce);
  const Profile& trial = p.profile_for("trial");
  EXPECT_EQ(trial.mode, Mode::enforce);
  ASSERT_EQ(trial.allow.size(), 2u) << "a.test kept, not repeated; b.test:8080 added";
  EXPECT_EQ(trial.allow[1].written, "b.test:8080");
  EXPECT_EQ(decide_name(trial, *parse_host("b.test").host, 8080).verdict, Verdict::allow);
  EXPECT_TRUE(p.base.allow.empty()) << "the top level is left alone";
}

TEST(Suggest, WithTheRunsPolicyARuleIsAddedOnlyForTheReportedRequests) {
  SuggestInput in;
  in.agent = "trial";
  in.source = "test.db";
  in.base = std::pair{std::string(R"({"version": 1, "mode": "report", "allow": ["api.github.com"],
    "inspect": ["api.github.com"],
    "rules": [{"host": "api.github.com", "methods": ["GET"], "paths": ["/repos/acme/*"], "action": "allow"}]})"),
                      std::string("run.json")};
  in.rows = {{"connect", "api.github.com", 443, "", "", "allow", "allow[0] api.github.com", false, 1},
             {"http", "api.github.com", 443, "GET", "/repos/acme/x", "allow", "rules[0]", true, 4},
             {"http", "api.github.com", 443, "POST", "/repos/acme/y/issues", "report", "rules", true, 1}};
  const Policy p = parse_policy(suggest_policy(in), "suggested");
  ASSERT_EQ(p.base.rules.size(), 2u) << "the file's rule, and one for the reported POST";
  // Every method seen under the reported pattern (GET was let through there already).
  EXPECT_EQ(p.base.rules[1].methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(p.base.rules[1].paths, (std::vector<std::string>{"/repos/acme/*"}));
  EXPECT_EQ(p.base.allow.size(), 1u) << "allowed and inspected already";
  EXPECT_EQ(p.base.inspect.size(), 1u);
}

}  // namespace
}  // namespace netbox::policy
