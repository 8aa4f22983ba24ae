// decide_dns_name: what the DNS view answers, name rules only and whatever the port.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

using namespace netbox::policy;

namespace {

Decision dns(const std::string& json, const std::string& name) {
  const Policy p = parse_policy(json, "test.json");
  return decide_dns_name(p.profile_for("anonymous"), name);
}

const char* kPolicy = R"({
  "version": 1,
  "allow": ["api.example.com", "*.pypi.org", "files.example.com:8443"],
  "deny":  ["*.evil.example", "api.example.com:22"],
  "ports": [443]
})";

}  // namespace

TEST(DecideDnsName, AllowedNameIsAnsweredWhateverThePortList) {
  auto d = dns(kPolicy, "api.example.com");
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "allow[0] api.example.com");
  // Allowed only on a port outside `ports`: the name still resolves, the connection decides.
  EXPECT_EQ(dns(kPolicy, "files.example.com").verdict, Verdict::allow);
  EXPECT_EQ(dns(kPolicy, "x.pypi.org").verdict, Verdict::allow);
}

TEST(DecideDnsName, DenyWithoutPortRefusesTheName) {
  auto d = dns(kPolicy, "a.evil.example");
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "deny[0] *.evil.example");
}

TEST(DecideDnsName, NameNotListedIsRefusedWithAnActionableReason) {
  auto d = dns(kPolicy, "pypi.org");  // the wildcard covers only names below it
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.reason, "pypi.org is not in allow; add it to allow to permit it");
}

TEST(DecideDnsName, NetworkAllowLetsTheConnectionDecide) {
  auto d = dns(R"({"version":1, "allow":["203.0.113.0/24"]})", "anything.example");
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "");
}

TEST(DecideDnsName, ReportModeLetsADeniedNameThroughAsReport) {
  auto d = dns(R"({"version":1, "mode":"report", "allow":["a.example"]})", "b.example");
  EXPECT_EQ(d.verdict, Verdict::report);
}
