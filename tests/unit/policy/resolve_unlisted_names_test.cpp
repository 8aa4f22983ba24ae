// resolve_unlisted_names: a name no allow entry lists, let through by a network entry,
// is refused before any lookup unless pinned or the policy opts in (issue 22, item 8).
#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace netbox::policy;

namespace {

std::optional<Decision> refused(const std::string& json, const std::string& name) {
  const Policy p = parse_policy(json, "test.json");
  const Profile& profile = p.profile_for("anonymous");
  return unlisted_lookup_refused(p, profile, decide_dns_name(profile, name), name);
}

TEST(ResolveUnlistedNames, ANetworkEntryAloneDoesNotLetANameBeLookedUp) {
  const char* policy = R"({"version": 1, "allow": ["10.0.0.0/8", "api.example.test"],
                          "resolve": {"pinned.example.test": ["10.0.0.7"]}})";
  auto d = refused(policy, "secret-data.example.test");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::deny);
  EXPECT_EQ(d->rule, "resolve_unlisted_names");
  EXPECT_THAT(d->reason, ::testing::HasSubstr("\"resolve_unlisted_names\": true"));
  EXPECT_FALSE(refused(policy, "api.example.test"));     // listed
  EXPECT_FALSE(refused(policy, "pinned.example.test"));  // pinned: no lookup
}

TEST(ResolveUnlistedNames, TheOptInAppliesToEveryProfileAndReportModeReports) {
  const char* policy = R"({"version": 1, "allow": ["10.0.0.0/8"], "resolve_unlisted_names": true,
                          "agents": {"a": {"allow": ["192.0.2.0/24"]}}})";
  EXPECT_FALSE(refused(policy, "x.example.test"));
  const Policy p = parse_policy(policy, "test.json");
  EXPECT_TRUE(p.profile_for("a").resolve_unlisted_names);
  auto d = refused(R"({"version": 1, "mode": "report", "allow": ["10.0.0.0/8"]})", "x.example.test");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, Verdict::report);
}

TEST(ResolveUnlistedNames, TheKeyIsABooleanAtTheTopLevelOnly) {
  try {
    parse_policy("{\"version\": 1,\n \"resolve_unlisted_names\": \"yes\"}", "p.json");
    FAIL() << "accepted a string";
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.json_path(), "/resolve_unlisted_names");
    EXPECT_EQ(e.line(), 2);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("must be true or false"));
  }
  EXPECT_THROW(parse_policy(R"({"version": 1, "agents": {"a": {"resolve_unlisted_names": true}}})", "p.json"),
               PolicyError);
  const Policy p = parse_policy(R"({"version": 1, "allow": ["10.0.0.0/8"]})", "p.json");
  EXPECT_THAT(summarize(p), ::testing::HasSubstr("resolve_unlisted_names: false"));
}

}  // namespace
