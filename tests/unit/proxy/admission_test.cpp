// Admission with static pins: the whole decision on a destination, with no socket and
// no DNS. A lookup is the one step that waits; here its answer is handed in directly.
#include "pipeline/admission.hpp"

#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

using boost::asio::ip::make_address;
using boost::asio::ip::tcp;

policy::Host host(std::string_view raw) { return *policy::parse_host(raw).host; }

class AdmissionTest : public ::testing::Test {
 protected:
  void load(const std::string& rules, const std::string& agent = "coder") {
    policy_ = policy::parse_policy(R"({"version": 1, )" + rules + "}", "test.json");
    admission_.bind(policy_, policy_.profile_for(agent), AgentIdentity{agent, {}, nullptr, {}});
  }
  AdmissionResult decide(std::string_view h, std::uint16_t port) {
    auto r = admission_.begin(host(h), port);
    if (!r) ADD_FAILURE() << h << " needed a lookup";
    return r ? std::move(*r) : AdmissionResult{Refused{}};
  }

  policy::Policy policy_;
  OwnEndpoints own_;
  Caps caps_;
  Counters counters_;
  Guardians guardians_{nullptr};
  Admission admission_{own_, caps_, counters_, guardians_};
};

TEST_F(AdmissionTest, APinnedNameIsAdmittedAtItsPinsInOrderHoldingACapSlot) {
  load(R"("allow": ["api.test"], "resolve": {"api.test": ["192.0.2.7", "2001:db8::7"]})");
  auto r = decide("api.test", 443);
  ASSERT_TRUE(std::holds_alternative<Admitted>(r));
  auto& a = std::get<Admitted>(r);
  EXPECT_EQ(a.outcome(), Outcome::allow);
  EXPECT_EQ(a.decision.rule, "allow[0] api.test");
  EXPECT_EQ(a.endpoints, (std::vector<tcp::endpoint>{{make_address("192.0.2.7"), 443},
                                                     {make_address("2001:db8::7"), 443}}));
  EXPECT_TRUE(a.cap);
  EXPECT_EQ(caps_.total(), 1U);
  a.cap.release();
  EXPECT_EQ(caps_.total(), 0U);
}

TEST_F(AdmissionTest, ADeniedNameIsRefusedBeforeAnyLookup) {
  load(R"("allow": ["api.test"], "deny": ["*.evil.test"])");
  const auto r = decide("x.evil.test", 443);
  ASSERT_TRUE(std::holds_alternative<Refused>(r));
  const auto& no = std::get<Refused>(r);
  EXPECT_EQ(no.refusal.status, 403U);
  EXPECT_EQ(no.refusal.outcome, Outcome::deny);
  EXPECT_EQ(no.refusal.rule, "deny[0] *.evil.test");
  EXPECT_EQ(no.rule, no.refusal.rule);
  EXPECT_EQ(no.resolved_addr, "") << "nothing was resolved";
  EXPECT_EQ(caps_.total(), 0U);
}

TEST_F(AdmissionTest, AnUnpinnedNameWaitsForItsLookupThenIsDecidedOnTheAnswer) {
  load(R"("allow": ["api.test"])");
  ASSERT_FALSE(admission_.begin(host("api.test"), 80));
  auto r = admission_.resolved({{make_address("10.0.0.5"), make_address("198.51.100.1")}, {}, false});
  ASSERT_TRUE(std::holds_alternative<Admitted>(r));
  EXPECT_EQ(std::get<Admitted>(r).endpoints, (std::vector<tcp::endpoint>{{make_address("198.51.100.1"), 80}}))
      << "the internal address is dropped, the other dialled";
}

TEST_F(AdmissionTest, AFailedLookupIsAnErrorThatKeepsTheNamesRuleForTheRow) {
  load(R"("allow": ["api.test"])");
  ASSERT_FALSE(admission_.begin(host("api.test"), 80));
  const auto r = admission_.resolved({{}, "DNS lookup of api.test failed: Domain name not found", false});
  ASSERT_TRUE(std::holds_alternative<Refused>(r));
  const auto& no = std::get<Refused>(r);
  EXPECT_EQ(no.refusal.status, 502U);
  EXPECT_EQ(no.refusal.outcome, Outcome::error);
  EXPECT_EQ(no.refusal.rule, "") << "the answer cites no rule: the policy allowed it";
  EXPECT_EQ(no.refusal.reason, no.error);
  EXPECT_EQ(no.rule, "allow[0] api.test");
  EXPECT_NE(no.error.find("Domain name not found"), std::string::npos);
  EXPECT_EQ(counters_.upstream_errors.load(), 1U);
}

TEST_F(AdmissionTest, APinToAnInternalAddressIsDeniedNamingThatAddress) {
  load(R"("allow": ["api.test"], "resolve": {"api.test": ["169.254.169.254"]})");
  const auto r = decide("api.test", 80);
  ASSERT_TRUE(std::holds_alternative<Refused>(r));
  const auto& no = std::get<Refused>(r);
  EXPECT_EQ(no.refusal.outcome, Outcome::deny);
  EXPECT_EQ(no.rule, "internal");
  EXPECT_EQ(no.resolved_addr, "169.254.169.254");
}

// Report mode lets through, as `report`, what the policy's lists would refuse; an internal
// address stays refused (the metadata service is never a thing to learn about).
TEST_F(AdmissionTest, ReportModeAdmitsWhatThePolicyWouldRefuseAsReportButNotAnInternalAddress) {
  load(R"("mode": "report", "allow": ["api.test"],
          "resolve": {"api.test": ["10.1.2.3"], "other.test": ["192.0.2.7"]})");
  const auto r = decide("other.test", 80);
  ASSERT_TRUE(std::holds_alternative<Admitted>(r));
  EXPECT_EQ(std::get<Admitted>(r).outcome(), Outcome::report);
  const auto internal = decide("api.test", 80);
  ASSERT_TRUE(std::holds_alternative<Refused>(internal));
  EXPECT_EQ(std::get<Refused>(internal).refusal.outcome, Outcome::deny);
  EXPECT_EQ(std::get<Refused>(internal).rule, "internal");
}

TEST_F(AdmissionTest, NetboxsOwnEndpointIsRefusedWhateverThePolicyAndMode) {
  load(R"("mode": "report", "allow": ["api.test"], "internal": {"allow": ["127.0.0.0/8"]},
          "resolve": {"api.test": ["127.0.0.1"]})");
  own_.add({make_address("127.0.0.1"), 3128});
  const auto r = decide("api.test", 3128);
  ASSERT_TRUE(std::holds_alternative<Refused>(r));
  EXPECT_EQ(std::get<Refused>(r).refusal.outcome, Outcome::deny);
  EXPECT_EQ(std::get<Refused>(r).rule, "netbox");
  // The same address on another port is an ordinary (allowed) internal destination.
  EXPECT_TRUE(std::holds_alternative<Admitted>(decide("api.test", 8080)));
}

TEST_F(AdmissionTest, AnIpLiteralNeedsNoLookup) {
  load(R"("allow": ["203.0.113.0/24"])");
  const auto r = decide("203.0.113.9", 80);
  ASSERT_TRUE(std::holds_alternative<Admitted>(r));
  EXPECT_EQ(std::get<Admitted>(r).endpoints.front().address(), make_address("203.0.113.9"));
}

TEST_F(AdmissionTest, OverTheCapIsACapRefusalWithRetryAfter) {
  load(R"("allow": ["api.test"], "limits": {"max_connections_per_host": 1},
          "resolve": {"api.test": ["192.0.2.7"]})");
  auto first = decide("api.test", 80);
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  const auto second = decide("api.test", 80);
  ASSERT_TRUE(std::holds_alternative<Refused>(second));
  const auto& no = std::get<Refused>(second);
  EXPECT_EQ(no.refusal.status, 429U);
  EXPECT_EQ(no.refusal.outcome, Outcome::cap);
  EXPECT_EQ(no.refusal.retry_after, 1U);
  EXPECT_EQ(no.rule, "limits.max_connections_per_host");
  EXPECT_EQ(no.resolved_addr, "192.0.2.7");
  EXPECT_EQ(counters_.caps_hit_host.load(), 1U);
}

}  // namespace
}  // namespace netbox::proxy
