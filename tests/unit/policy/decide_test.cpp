// decide_name / decide_address against policies written as users write them.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

using namespace netbox::policy;
using boost::asio::ip::make_address;

namespace {

Policy load(const std::string& json) { return parse_policy(json, "test.json"); }

Host host(std::string_view raw) {
  auto h = parse_host(raw);
  EXPECT_TRUE(h) << raw;
  return *h.host;
}

Decision name(const Policy& p, std::string_view h, uint16_t port, const std::string& agent = "anonymous") {
  return decide_name(p.profile_for(agent), host(h), port);
}

Decision addr(const Policy& p, std::string_view h, uint16_t port, const char* a, const std::string& agent = "anonymous") {
  return decide_address(p.profile_for(agent), host(h), port, make_address(a));
}

// Names only: a name not listed is refused before any lookup.
const char* kNamePolicy = R"({
  "version": 1,
  "allow": ["api.example.com", "*.pypi.org", "files.example.com:443"],
  "deny":  ["*.evil.example"]
})";

const char* kIssuePolicy = R"({
  "version": 1,
  "allow": ["api.example.com", "*.pypi.org", "files.example.com:443", "203.0.113.0/24"],
  "deny":  ["*.evil.example", "198.51.100.7"],
  "ports": [80, 443],
  "internal": { "allow": ["127.0.0.1/32"] }
})";

}  // namespace

TEST(Decide, ExactHostIsAllowedOnListedPorts) {
  auto p = load(kIssuePolicy);
  auto d = name(p, "api.example.com", 443);
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "allow[0] api.example.com");
  EXPECT_EQ(d.reason, "api.example.com matches allow[0] api.example.com");
  EXPECT_EQ(name(p, "api.example.com", 80).verdict, Verdict::allow);
}

TEST(Decide, MatchingIsCaseInsensitiveAndIgnoresOneTrailingDot) {
  auto p = load(kIssuePolicy);
  EXPECT_EQ(name(p, "API.Example.COM.", 443).verdict, Verdict::allow);
  auto p2 = load(R"({"version":1, "allow":["Api.Example.Com."]})");
  EXPECT_EQ(name(p2, "api.example.com", 443).verdict, Verdict::allow);
}

TEST(Decide, IdnaNamesCompareInPunycode) {
  auto p = load(R"({"version":1, "allow":["bücher.example", "*.münchen.example"]})");
  EXPECT_EQ(name(p, "xn--bcher-kva.example", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "BÜCHER.example", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "www.xn--mnchen-3ya.example", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "bucher.example", 443).verdict, Verdict::deny);
}

TEST(Decide, WildcardMatchesSubdomainsButNotTheApex) {
  auto p = load(kNamePolicy);
  EXPECT_EQ(name(p, "files.pypi.org", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "a.b.pypi.org", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "files.pypi.org", 443).rule, "allow[1] *.pypi.org");
  auto apex = name(p, "pypi.org", 443);
  EXPECT_EQ(apex.verdict, Verdict::deny);
  EXPECT_EQ(apex.reason, "pypi.org is not in allow; add it to allow to permit it");
  EXPECT_EQ(name(p, "notpypi.org", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "pypi.org.evil.example", 443).verdict, Verdict::deny);
}

TEST(Decide, NotAllowedIsDeniedWithAnActionableReason) {
  auto p = load(kNamePolicy);
  auto d = name(p, "example.org", 443);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "");
  EXPECT_EQ(d.reason, "example.org is not in allow; add it to allow to permit it");
}

TEST(Decide, PortNotInPortsIsDenied) {
  auto p = load(kIssuePolicy);
  auto d = name(p, "api.example.com", 22);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "ports");
  EXPECT_EQ(d.reason, "port 22 is not in ports [80, 443]");
}

TEST(Decide, HostPortEntryRestrictsThatEntryToItsPort) {
  auto p = load(kIssuePolicy);
  EXPECT_EQ(name(p, "files.example.com", 443).verdict, Verdict::allow);
  auto d = name(p, "files.example.com", 80);  // 80 is in ports, but the entry says 443
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "allow[2] files.example.com:443");
  EXPECT_EQ(d.reason, "files.example.com is allowed only on port 443 by allow[2] files.example.com:443, not on port 80");
}

TEST(Decide, HostPortEntryAllowsItsPortEvenOutsidePorts) {
  auto p = load(R"({"version":1, "allow":["git.example.com:22"], "ports":[443]})");
  auto d = name(p, "git.example.com", 22);
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "allow[0] git.example.com:22");
  EXPECT_EQ(name(p, "git.example.com", 443).verdict, Verdict::deny);
}

TEST(Decide, DenyWinsOverAllow) {
  auto p = load(R"({"version":1, "allow":["*.example.com"], "deny":["secret.example.com"]})");
  auto d = name(p, "secret.example.com", 443);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "deny[0] secret.example.com");
  EXPECT_EQ(d.reason, "secret.example.com matches deny[0] secret.example.com");
  EXPECT_EQ(name(p, "public.example.com", 443).verdict, Verdict::allow);
}

TEST(Decide, DenyWildcardReasonNamesTheRule) {
  auto p = load(kIssuePolicy);
  auto d = name(p, "api.evil.example", 443);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.reason, "api.evil.example matches deny[0] *.evil.example");
}

TEST(Decide, DenyWithPortOnlyDeniesThatPort) {
  auto p = load(R"({"version":1, "allow":["*.example.com"], "deny":["old.example.com:80"]})");
  EXPECT_EQ(name(p, "old.example.com", 80).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "old.example.com", 443).verdict, Verdict::allow);
}

TEST(Decide, InternalAddressIsDeniedWithTheIssueWording) {
  auto p = load(R"({"version":1, "allow":["10.0.0.0/8"]})");
  auto d = name(p, "10.0.0.5", 443);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "internal");
  EXPECT_EQ(d.reason, "10.0.0.5 is internal (RFC 1918) and not in internal.allow");
}

TEST(Decide, ResolvedInternalAddressOfAnAllowedNameIsDenied) {
  auto p = load(kIssuePolicy);
  auto d = addr(p, "api.example.com", 443, "169.254.169.254");
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.rule, "internal");
  EXPECT_EQ(d.reason,
            "api.example.com resolved to 169.254.169.254, which is internal (cloud metadata) and not in internal.allow");
  EXPECT_EQ(addr(p, "api.example.com", 443, "93.184.216.34").verdict, Verdict::allow);
}

TEST(Decide, InternalAllowLiftsTheInternalBanOnly) {
  auto p = load(R"({"version":1, "allow":["demo.test"], "internal":{"allow":["127.0.0.1/32"]}})");
  EXPECT_EQ(addr(p, "demo.test", 80, "127.0.0.1").verdict, Verdict::allow);
  EXPECT_EQ(addr(p, "demo.test", 80, "::ffff:127.0.0.1").verdict, Verdict::allow);
  EXPECT_EQ(addr(p, "demo.test", 80, "127.0.0.2").verdict, Verdict::deny);
  // The literal itself is still not in allow.
  auto d = name(p, "127.0.0.1", 80);
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.reason, "127.0.0.1 is not in allow; add it to allow to permit it");
}

TEST(Decide, EveryLiteralFormIsCheckedAsTheAddress) {
  auto p = load(R"({"version":1, "allow":["*.example.com"]})");
  for (const char* lit : {"127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "[::1]", "::ffff:127.0.0.1",
                          "[::ffff:7f00:1]", "64:ff9b::7f00:1"}) {
    auto d = name(p, lit, 443);
    EXPECT_EQ(d.verdict, Verdict::deny) << lit;
    EXPECT_EQ(d.rule, "internal") << lit << ": " << d.reason;
    EXPECT_NE(d.reason.find("loopback"), std::string::npos) << d.reason;
  }
}

TEST(Decide, LiteralsMatchCidrAndIpEntries) {
  auto p = load(kIssuePolicy);
  auto d = name(p, "203.0.113.9", 443);
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "allow[3] 203.0.113.0/24");
  EXPECT_EQ(name(p, "::ffff:203.0.113.9", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "203.0.114.9", 443).verdict, Verdict::deny);
  auto den = name(p, "198.51.100.7", 443);
  EXPECT_EQ(den.verdict, Verdict::deny);
  EXPECT_EQ(den.reason, "198.51.100.7 matches deny[1] 198.51.100.7");
  // The same address in a numeric disguise is the same address.
  EXPECT_EQ(name(p, "3325256711", 443).rule, "deny[1] 198.51.100.7");
}

TEST(Decide, V4DenyAlsoCatchesEmbeddedForms) {
  auto p = load(R"({"version":1, "allow":["::/0", "0.0.0.0/0"], "deny":["93.184.216.34"]})");
  EXPECT_EQ(name(p, "93.184.216.34", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "::ffff:93.184.216.34", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "64:ff9b::5db8:d822", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "2002:5db8:d822::1", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "93.184.216.35", 443).verdict, Verdict::allow);
}

TEST(Decide, IPv6EntriesMatchIPv6Addresses) {
  auto p = load(R"({"version":1, "allow":["2001:db8::/32", "[2606:4700::1111]:443"]})");
  EXPECT_EQ(name(p, "[2001:db8::5]", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "2606:4700::1111", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "2606:4700::1111", 80).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "2001:db9::5", 443).verdict, Verdict::deny);
}

TEST(Decide, NameUnlistedButNetworksAllowedIsDecidedByItsAddress) {
  auto p = load(kIssuePolicy);
  auto first = name(p, "cdn.example.net", 443);
  EXPECT_EQ(first.verdict, Verdict::allow);  // go on and resolve
  EXPECT_EQ(first.rule, "");
  EXPECT_EQ(addr(p, "cdn.example.net", 443, "203.0.113.20").verdict, Verdict::allow);
  auto d = addr(p, "cdn.example.net", 443, "93.184.216.34");
  EXPECT_EQ(d.verdict, Verdict::deny);
  EXPECT_EQ(d.reason, "cdn.example.net (93.184.216.34) is not in allow; add it to allow to permit it");
  auto den = addr(p, "cdn.example.net", 443, "198.51.100.7");
  EXPECT_EQ(den.reason, "cdn.example.net resolved to 198.51.100.7, which matches deny[1] 198.51.100.7");
}

TEST(Decide, AddressStepStillHonoursNameDeny) {
  auto p = load(kIssuePolicy);
  EXPECT_EQ(addr(p, "x.evil.example", 443, "203.0.113.1").verdict, Verdict::deny);
}

TEST(Decide, ReportModeTurnsEveryDenyIntoReportWithTheSameRuleAndReason) {
  auto enforce = load(R"({"version":1, "allow":["api.example.com"], "deny":["*.evil.example"]})");
  auto rep = load(R"({"version":1, "mode":"report", "allow":["api.example.com"], "deny":["*.evil.example"]})");
  struct Case { const char* host; uint16_t port; };
  for (auto c : {Case{"example.org", 443}, Case{"api.example.com", 22}, Case{"a.evil.example", 443},
                 Case{"203.0.113.5", 443}}) {
    auto d = name(rep, c.host, c.port);
    EXPECT_EQ(d.verdict, Verdict::report) << c.host;
    EXPECT_TRUE(d.lets_through());
    EXPECT_EQ(d.reason, name(enforce, c.host, c.port).reason) << c.host;
    EXPECT_EQ(d.rule, name(enforce, c.host, c.port).rule) << c.host;
  }
  EXPECT_EQ(name(rep, "api.example.com", 443).verdict, Verdict::allow);
  EXPECT_EQ(addr(rep, "api.example.org", 443, "203.0.113.1").verdict, Verdict::report);
}

// Report mode learns what an agent needs; it never lets an internal address through
// (cloud metadata, the host's services): those refusals hold as in enforce mode.
TEST(Decide, ReportModeStillRefusesInternalAddresses) {
  auto rep = load(R"({"version":1, "mode":"report", "allow":["api.example.com", "10.0.0.0/8"]})");
  for (const char* a : {"169.254.169.254", "10.0.0.1", "127.0.0.1", "::ffff:169.254.169.254"}) {
    auto d = addr(rep, "api.example.com", 443, a);
    EXPECT_EQ(d.verdict, Verdict::deny) << a;
    EXPECT_EQ(d.rule, "internal") << a;
    EXPECT_EQ(addr(rep, a, 443, a).verdict, Verdict::deny) << a;
  }
}

TEST(Decide, AgentProfileReplacesTheKeysItNames) {
  auto p = load(R"({
    "version": 1,
    "allow": ["api.example.com"],
    "ports": [443],
    "agents": {
      "coder": { "allow": ["pypi.org", "*.github.com"], "ports": [443, 8443] },
      "auditor": { "mode": "report" }
    }
  })");
  auto d = name(p, "pypi.org", 8443, "coder");
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.rule, "agents.coder.allow[0] pypi.org");
  EXPECT_EQ(name(p, "api.example.com", 443, "coder").verdict, Verdict::deny);  // replaced, not merged
  EXPECT_EQ(name(p, "api.example.com", 443).verdict, Verdict::allow);
  EXPECT_EQ(name(p, "pypi.org", 443, "someone-else").verdict, Verdict::deny);  // unknown agent: top level
  EXPECT_EQ(name(p, "example.org", 443, "auditor").verdict, Verdict::report);
  EXPECT_EQ(name(p, "api.example.com", 443, "auditor").verdict, Verdict::allow);  // inherits allow
  auto port = name(p, "pypi.org", 80, "coder");
  EXPECT_EQ(port.reason, "port 80 is not in ports [443, 8443]");
}

TEST(Decide, AgentDenyCitesTheAgentList) {
  auto p = load(R"({"version":1, "allow":["*.example.com"], "agents":{"bot":{"deny":["x.example.com"]}}})");
  auto d = name(p, "x.example.com", 443, "bot");
  EXPECT_EQ(d.rule, "agents.bot.deny[0] x.example.com");
  EXPECT_EQ(d.reason, "x.example.com matches agents.bot.deny[0] x.example.com");
}

TEST(Decide, DefaultPolicyAllowsNothing) {
  auto p = default_policy();
  EXPECT_EQ(name(p, "example.com", 443).verdict, Verdict::deny);
  EXPECT_EQ(name(p, "93.184.216.34", 443).verdict, Verdict::deny);
  EXPECT_EQ(p.base.ports, (std::vector<uint16_t>{80, 443}));
}
