// limits' budgets and rates (issue 25 item 1): bytes_up, bytes_down, requests_per_minute
// with burst, new_hosts_per_minute, bandwidth_up/down and destinations; typed values,
// merging per agent, matching order, and every mistake named with its key and position.
#include "netbox/policy/load.hpp"
#include "policy_error.hpp"

#include <gtest/gtest.h>

using namespace netbox::policy;
using netbox::policy_test::error_of;
using netbox::policy_test::expect_fail;

namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

std::string with_limits(const std::string& limits) { return R"({"version": 1, "limits": )" + limits + "}"; }

}  // namespace

TEST(LimitsBudget, EveryKeyLoadsIntoTypedValues) {
  const Policy p = parse_policy(R"({"version": 1, "limits": {
      "bytes_up": "64M", "bytes_down": 1000, "requests_per_minute": 60, "burst": 10,
      "new_hosts_per_minute": 30, "bandwidth_up": "1M", "bandwidth_down": "512k",
      "destinations": [{"host": "*.github.com", "bytes_up": "64M", "requests_per_minute": 60, "burst": 10},
                       {"host": "api.example.com:443", "bytes_down": "1G"}]}})",
                                "p.json");
  const Limits& l = p.base.limits;
  EXPECT_EQ(l.bytes_up, 64 * kMiB);
  EXPECT_EQ(l.bytes_down, 1000U);
  ASSERT_TRUE(l.rate());
  EXPECT_EQ(*l.rate(), (RequestRate{60, 10}));
  EXPECT_EQ(l.new_hosts_per_minute, 30U);
  EXPECT_EQ(l.bandwidth_up, kMiB);
  EXPECT_EQ(l.bandwidth_down, 512U * 1024);
  ASSERT_EQ(l.destinations.size(), 2U);
  EXPECT_EQ(l.destinations[0].host.kind, Rule::Kind::wildcard_host);
  EXPECT_EQ(l.destinations[0].host.host, "github.com");
  EXPECT_EQ(l.destinations[0].bytes_up, 64 * kMiB);
  EXPECT_FALSE(l.destinations[0].bytes_down);
  EXPECT_EQ(l.destinations[0].requests, (RequestRate{60, 10}));
  EXPECT_EQ(l.destinations[0].cite(), "limits.destinations[0] *.github.com");
  EXPECT_EQ(l.destinations[1].host.port, 443);
  EXPECT_EQ(l.destinations[1].bytes_down, 1024 * kMiB);
  EXPECT_FALSE(l.destinations[1].requests);
}

TEST(LimitsBudget, UnsetByDefault) {
  const Limits& l = default_policy().base.limits;
  EXPECT_FALSE(l.bytes_up || l.bytes_down || l.requests_per_minute || l.burst || l.new_hosts_per_minute ||
               l.bandwidth_up || l.bandwidth_down);
  EXPECT_FALSE(l.rate());
  EXPECT_TRUE(l.destinations.empty());
}

// An agent's limits change only the keys they name; "unlimited" lifts an inherited budget
// or rate; destinations is one key, replaced whole.
TEST(LimitsBudget, AgentsMergeKeyByKey) {
  const Policy p = parse_policy(R"({"version": 1,
    "limits": {"bytes_up": "1G", "bytes_down": "2G", "requests_per_minute": 60, "burst": 10, "bandwidth_up": "1M",
               "destinations": [{"host": "*.github.com", "bytes_up": "64M"}]},
    "agents": {
      "slow": {"limits": {"requests_per_minute": 6}},
      "bursty": {"limits": {"burst": 100}},
      "free": {"limits": {"bytes_up": "unlimited", "requests_per_minute": "unlimited", "bandwidth_up": "unlimited",
                          "destinations": []}},
      "other": {"limits": {"destinations": [{"host": "api.example.com", "bytes_down": "8M"}]}},
      "plain": {"mode": "report"}}})",
                                "p.json");
  EXPECT_EQ(p.profile_for("slow").limits.rate(), (RequestRate{6, 10}));
  EXPECT_EQ(p.profile_for("slow").limits.bytes_up, 1024 * kMiB);
  EXPECT_EQ(p.profile_for("bursty").limits.rate(), (RequestRate{60, 100}));
  const Limits& free = p.profile_for("free").limits;
  EXPECT_FALSE(free.bytes_up);
  EXPECT_EQ(free.bytes_down, 2048 * kMiB);
  EXPECT_FALSE(free.requests_per_minute);
  EXPECT_FALSE(free.burst);  // goes with its rate
  EXPECT_FALSE(free.bandwidth_up);
  EXPECT_TRUE(free.destinations.empty());
  const Limits& other = p.profile_for("other").limits;
  ASSERT_EQ(other.destinations.size(), 1U);
  EXPECT_EQ(other.destinations[0].cite(), "agents.other.limits.destinations[0] api.example.com");
  EXPECT_EQ(p.profile_for("plain").limits.destinations.size(), 1U);
  EXPECT_EQ(p.profile_for("plain").limits.rate(), (RequestRate{60, 10}));
}

TEST(LimitsBudget, ZeroNegativeAndBadSizesAreRefusedNamingTheKey) {
  for (const char* key : {"bytes_up", "bytes_down", "bandwidth_up", "bandwidth_down"}) {
    const std::string k = key;
    expect_fail(with_limits("{\"" + k + "\": 0}"), "/limits/" + k, "a budget of 0 refuses everything");
    expect_fail(with_limits("{\"" + k + "\": \"0M\"}"), "/limits/" + k, "at least 1 byte");
    expect_fail(with_limits("{\"" + k + "\": -5}"), "/limits/" + k, "must not be negative");
    expect_fail(with_limits("{\"" + k + "\": \"-5M\"}"), "/limits/" + k, "must not be negative");
    expect_fail(with_limits("{\"" + k + "\": \"64X\"}"), "/limits/" + k, "must be a size such as 64M or 1G");
    expect_fail(with_limits("{\"" + k + "\": 1.5}"), "/limits/" + k, "not a floating-point number");
    expect_fail(with_limits("{\"" + k + "\": true}"), "/limits/" + k, "not a boolean");
  }
  for (const char* key : {"requests_per_minute", "new_hosts_per_minute", "burst"}) {
    const std::string k = key;
    const std::string extra = k == "requests_per_minute" ? ", \"burst\": 5" : k == "burst" ? ", \"requests_per_minute\": 5" : "";
    expect_fail(with_limits("{\"" + k + "\": 0" + extra + "}"), "/limits/" + k, "positive integer, not 0");
    expect_fail(with_limits("{\"" + k + "\": -1" + extra + "}"), "/limits/" + k, "positive integer, not -1");
    expect_fail(with_limits("{\"" + k + "\": \"ten\"" + extra + "}"), "/limits/" + k, "positive integer");
  }
}

TEST(LimitsBudget, ErrorsCarryTheKeysLineAndColumn) {
  const PolicyError e = error_of("{\n  \"version\": 1,\n  \"limits\": {\n    \"bytes_up\": \"64X\"\n  }\n}\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.column(), 17);
  EXPECT_EQ(std::string(e.what()), "p.json:4:17: /limits/bytes_up: must be a size such as 64M or 1G or \"unlimited\", not \"64X\"");
}

TEST(LimitsBudget, UnknownKeysAreRefusedWithASuggestion) {
  expect_fail(with_limits(R"({"byte_up": "1M"})"), "/limits/byte_up", "did you mean 'bytes_up'?");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "bytes_upp": 5}]})"),
              "/limits/destinations/0/bytes_upp", "did you mean 'bytes_up'?");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "bandwidth_up": "1M"}]})"),
              "/limits/destinations/0/bandwidth_up", "unknown key 'bandwidth_up'");
}

// A rate is a token bucket, and its size is a choice the author makes: requests_per_minute
// needs its burst, at the top level, in a profile (after merging) and in a destination.
TEST(LimitsBudget, ARateNeedsItsBurstAndABurstItsRate) {
  expect_fail(with_limits(R"({"requests_per_minute": 60})"), "/limits/requests_per_minute", "needs a \"burst\"");
  expect_fail(with_limits(R"({"burst": 10})"), "/limits/burst", "burst without requests_per_minute");
  expect_fail(with_limits(R"({"requests_per_minute": "unlimited", "burst": 10})"), "/limits/burst",
              "burst without requests_per_minute");
  expect_fail(R"({"version": 1, "agents": {"a": {"limits": {"requests_per_minute": 5}}}})",
              "/agents/a/limits/requests_per_minute", "needs a \"burst\"");
  expect_fail(R"({"version": 1, "agents": {"a": {"limits": {"burst": 5}}}})", "/agents/a/limits/burst",
              "burst without requests_per_minute");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "requests_per_minute": 60}]})"),
              "/limits/destinations/0/requests_per_minute", "needs a \"burst\"");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "bytes_up": 9, "burst": 3}]})"),
              "/limits/destinations/0/burst", "burst without requests_per_minute");
  // One message for one mistake: a bad rate is not also reported as missing its burst.
  const PolicyError e = error_of(with_limits(R"({"requests_per_minute": 0, "burst": 2})"));
  EXPECT_EQ(e.problems().size(), 1U) << e.what();
}

TEST(LimitsBudget, DestinationsAreCheckedEntryByEntry) {
  expect_fail(with_limits(R"({"destinations": {"host": "a.example"}})"), "/limits/destinations", "must be an array");
  expect_fail(with_limits(R"({"destinations": ["a.example"]})"), "/limits/destinations/0", "must be an object");
  expect_fail(with_limits(R"({"destinations": [{"bytes_up": "1M"}]})"), "/limits/destinations/0", "needs a \"host\"");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example"}]})"), "/limits/destinations/0",
              "names no budget or rate");
  expect_fail(with_limits(R"({"destinations": [{"host": "203.0.113.0/24", "bytes_up": 5}]})"),
              "/limits/destinations/0/host", "not an address or network");
  expect_fail(with_limits(R"({"destinations": [{"host": "api.*.example", "bytes_up": 5}]})"),
              "/limits/destinations/0/host", "'*' may only stand at the start");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "bytes_up": 0}]})"),
              "/limits/destinations/0/bytes_up", "at least 1 byte");
  expect_fail(with_limits(R"({"destinations": [{"host": "a.example", "bytes_up": "unlimited"}]})"),
              "/limits/destinations/0/bytes_up", "must be a size such as 64M or 1G, not \"unlimited\"");
  expect_fail(with_limits(R"({"destinations": [{"host": "A.Example.", "bytes_up": 1}, {"host": "a.example", "bytes_down": 1}]})"),
              "/limits/destinations/1/host", "listed twice (also limits.destinations[0] A.Example.)");
}

// Every entry covering a host applies; the most specific comes first.
TEST(LimitsBudget, DestinationEntriesForAHostMostSpecificFirst) {
  const Policy p = parse_policy(R"({"version": 1, "limits": {"destinations": [
      {"host": "*.github.com", "bytes_up": 1},
      {"host": "api.github.com", "bytes_up": 2},
      {"host": "*.api.github.com", "bytes_up": 3},
      {"host": "api.github.com:443", "bytes_up": 4},
      {"host": "*.github.com:443", "bytes_up": 5},
      {"host": "example.org", "bytes_up": 6}]}})",
                                "p.json");
  auto budgets = [&](const std::string& host, std::uint16_t port) {
    std::vector<std::uint64_t> out;
    for (const auto* d : destination_limits_for(p.base.limits, host, port)) out.push_back(*d->bytes_up);
    return out;
  };
  EXPECT_EQ(budgets("api.github.com", 443), (std::vector<std::uint64_t>{4, 2, 5, 1}));
  EXPECT_EQ(budgets("api.github.com", 80), (std::vector<std::uint64_t>{2, 1}));
  EXPECT_EQ(budgets("uploads.api.github.com", 443), (std::vector<std::uint64_t>{3, 5, 1}));
  EXPECT_EQ(budgets("github.com", 443), (std::vector<std::uint64_t>{}));  // *.x never covers x
  EXPECT_EQ(budgets("example.org", 443), (std::vector<std::uint64_t>{6}));
  EXPECT_EQ(budgets("evilgithub.com", 443), (std::vector<std::uint64_t>{}));
}

TEST(LimitsBudget, SummaryAndExplainShowThem) {
  const Policy p = parse_policy(R"({"version": 1, "limits": {"bytes_up": "64M", "requests_per_minute": 60, "burst": 10,
      "bandwidth_down": "1M", "destinations": [{"host": "*.github.com", "bytes_up": "64M"}]},
      "agents": {"a": {"limits": {"bytes_up": "1G"}}}})",
                                "p.json");
  const std::string s = summarize(p);
  EXPECT_NE(s.find("budgets:        bytes_up 64M, requests 60/min (burst 10), bandwidth_down 1M/s, 1 destination"),
            std::string::npos)
      << s;
  // The proxy enforces them (docs/policy.md, "Budgets and rates"): the summary must not say otherwise.
  EXPECT_EQ(s.find("not yet enforced"), std::string::npos) << s;
  EXPECT_NE(s.find("limits.destinations[0] *.github.com: bytes_up 64M"), std::string::npos) << s;
  EXPECT_NE(s.find("  agents.a:\n    budgets:        bytes_up 1G,"), std::string::npos) << s;
  const std::string x = explain_profiles(p);
  EXPECT_NE(x.find("agents.a (overrides limits)\n"), std::string::npos) << x;
  EXPECT_NE(x.find("content: secrets enforce (first 64K of a body), encoded_labels enforce"), std::string::npos) << x;
}
