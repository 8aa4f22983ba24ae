// What follows a host decision, decided in the policy alone (issue 23, item 3): a request
// (decide_request), a tunnel (decide_tunnel) and a TLS server name (check_server_name).
// The proxy only acts on these answers, so every report-mode case, every merge of a host
// decision with a rule's and every fronting case is pinned here.
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/load.hpp"

#include <gmock/gmock.h>

namespace netbox::policy {
namespace {

using ::testing::HasSubstr;

const char* kPolicy = R"({
  "version": 1,
  "allow": ["api.github.com", "blind.test", "plain.test", "open.test"],
  "inspect": ["api.github.com:443"],
  "rules": [
    {"host": "api.github.com", "methods": ["GET"], "paths": ["/repos/acme/*"], "action": "allow"},
    {"host": "api.github.com", "paths": ["/repos/acme/secret/*"], "action": "deny"},
    {"host": "blind.test", "action": "allow"},
    {"host": "plain.test:80", "methods": ["GET"], "action": "allow"}
  ],
  "agents": {"watcher": {"mode": "report"}}
})";

class DecideRequest : public ::testing::Test {
 protected:
  Policy policy = parse_policy(kPolicy, "p.json");
  const Profile& enforce = policy.base;
  const Profile& report = policy.profile_for("watcher");
  const Decision host_allow{Verdict::allow, "allow[0] api.github.com", ""};
  const Decision host_report{Verdict::report, "internal", "10.0.0.1 is internal"};
};

TEST_F(DecideRequest, AHostNoRuleNamesKeepsTheHostDecisionAndThePathAsSent) {
  const std::string host = "open.test";
  for (const Decision* d : {&host_allow, &host_report}) {
    const auto r = decide_request(enforce, {host, 443, *d}, "DELETE", "/a/../b?x=%2F");
    EXPECT_FALSE(r.refused());
    EXPECT_EQ(r.decision.verdict, d->verdict);
    EXPECT_EQ(r.decision.rule, d->rule);
    EXPECT_EQ(r.path_and_query, "/a/../b?x=%2F") << "nothing canonical is asked of a host no rule names";
    EXPECT_EQ(r.path, "");
  }
}

TEST_F(DecideRequest, ARuleThatAllowsIsTheRowsDecisionAndThePathIsCanonical) {
  const std::string host = "api.github.com";
  const auto r = decide_request(enforce, {host, 443, host_allow}, "GET", "/repos/x/../acme/widget?q=1");
  EXPECT_FALSE(r.refused());
  EXPECT_EQ(r.decision.verdict, Verdict::allow);
  EXPECT_EQ(r.decision.rule, "rules[0] api.github.com GET /repos/acme/*");
  EXPECT_EQ(r.path, "/repos/acme/widget");
  EXPECT_EQ(r.path_and_query, "/repos/acme/widget?q=1") << "what was matched is what is forwarded";
}

TEST_F(DecideRequest, AHostReportIsNotHiddenByARuleThatAllows) {
  const std::string host = "api.github.com";
  const auto r = decide_request(enforce, {host, 443, host_report}, "GET", "/repos/acme/widget");
  EXPECT_FALSE(r.refused());
  EXPECT_EQ(r.decision.verdict, Verdict::report);
  EXPECT_EQ(r.decision.rule, "internal");
  EXPECT_EQ(r.path, "/repos/acme/widget") << "the canonical path still goes";
}

TEST_F(DecideRequest, ARuleThatDeniesRefuses403InEnforceMode) {
  const std::string host = "api.github.com";
  for (const Decision* d : {&host_allow, &host_report}) {
    const auto r = decide_request(enforce, {host, 443, *d}, "PUT", "/repos/acme/secret/x");
    EXPECT_EQ(r.status, 403u);
    EXPECT_EQ(r.decision.verdict, Verdict::deny);
    EXPECT_EQ(r.decision.rule, "rules[1] api.github.com /repos/acme/secret/*");
    EXPECT_THAT(r.decision.reason, HasSubstr("PUT /repos/acme/secret/x on api.github.com is denied by rules[1]"));
  }
  const auto none = decide_request(enforce, {host, 443, host_allow}, "POST", "/repos/acme/widget");
  EXPECT_EQ(none.status, 403u);
  EXPECT_EQ(none.decision.rule, "rules");
  EXPECT_THAT(none.decision.reason, HasSubstr("no entry of rules allows POST /repos/acme/widget"));
}

TEST_F(DecideRequest, ARuleThatDeniesIsAReportInReportModeAndTheRequestGoes) {
  const std::string host = "api.github.com";
  for (const Decision* d : {&host_allow, &host_report}) {
    const auto r = decide_request(report, {host, 443, *d}, "PUT", "/repos/acme/secret/x");
    EXPECT_FALSE(r.refused());
    EXPECT_EQ(r.decision.verdict, Verdict::report);
    EXPECT_EQ(r.decision.rule, "rules[1] api.github.com /repos/acme/secret/*") << "the rule's report wins";
    EXPECT_EQ(r.path_and_query, "/repos/acme/secret/x");
  }
}

TEST_F(DecideRequest, APathWithTwoReadingsIsRefused400OrReportedAndGoesAsSent) {
  const std::string host = "api.github.com";
  const auto r = decide_request(enforce, {host, 443, host_allow}, "GET", "/repos/acme%2Fwidget");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.decision.verdict, Verdict::deny);
  EXPECT_EQ(r.decision.rule, "rules");
  EXPECT_THAT(r.decision.reason, HasSubstr("the path is refused: "));
  EXPECT_THAT(r.decision.reason, HasSubstr("rules name api.github.com, so its paths must have one meaning"));
  const auto rep = decide_request(report, {host, 443, host_allow}, "GET", "/repos/acme%2Fwidget");
  EXPECT_FALSE(rep.refused());
  EXPECT_EQ(rep.decision.verdict, Verdict::report);
  EXPECT_EQ(rep.decision.rule, "rules");
  EXPECT_EQ(rep.path_and_query, "/repos/acme%2Fwidget") << "report mode: as sent";
  EXPECT_EQ(rep.path, "");
}

TEST_F(DecideRequest, RulesNameAHostOnTheirPortOnly) {
  const std::string host = "plain.test";
  EXPECT_EQ(decide_request(enforce, {host, 80, host_allow}, "POST", "/").status, 403u);
  EXPECT_FALSE(decide_request(enforce, {host, 8080, host_allow}, "POST", "/").refused());
}

TEST_F(DecideRequest, AnInspectedHostGetsAnInspectedTunnelWhateverItCarries) {
  const std::string host = "api.github.com";
  for (auto carried : {Carried::opaque, Carried::plain_http}) {
    const auto t = decide_tunnel(enforce, {host, 443, host_report}, carried);
    EXPECT_TRUE(t.inspect);
    EXPECT_FALSE(t.refused());
    EXPECT_EQ(t.decision.rule, "internal") << "the host decision stands for the tunnel's row";
  }
  const auto other_port = decide_tunnel(enforce, {host, 8443, host_allow}, Carried::opaque);
  EXPECT_FALSE(other_port.inspect) << "inspect is per port";
  EXPECT_EQ(other_port.status, 403u) << "rules name the host on every port: a blind tunnel is refused";
}

TEST_F(DecideRequest, ABlindTunnelToAHostRulesNameIsRefusedUnlessItCarriesPlainHttp) {
  const std::string host = "blind.test";
  const auto t = decide_tunnel(enforce, {host, 443, host_allow}, Carried::opaque);
  EXPECT_FALSE(t.inspect);
  EXPECT_EQ(t.status, 403u);
  EXPECT_EQ(t.decision.verdict, Verdict::deny);
  EXPECT_EQ(t.decision.rule, "rules");
  EXPECT_THAT(t.decision.reason, HasSubstr("rules name blind.test:443 but netbox does not inspect it"));
  const auto http = decide_tunnel(enforce, {host, 443, host_allow}, Carried::plain_http);
  EXPECT_FALSE(http.refused()) << "each request is decided on its way";
  EXPECT_EQ(http.decision.rule, host_allow.rule);
  const auto rep = decide_tunnel(report, {host, 443, host_allow}, Carried::opaque);
  EXPECT_FALSE(rep.refused());
  EXPECT_EQ(rep.decision.verdict, Verdict::report);
  EXPECT_EQ(rep.decision.rule, "rules");
}

TEST_F(DecideRequest, ATunnelToAHostNoRuleNamesGoesUnderTheHostDecision) {
  const std::string host = "open.test";
  const auto t = decide_tunnel(enforce, {host, 443, host_report}, Carried::opaque);
  EXPECT_FALSE(t.refused());
  EXPECT_FALSE(t.inspect);
  EXPECT_EQ(t.decision.verdict, Verdict::report);
  EXPECT_EQ(t.decision.rule, "internal");
}

Host host_of(std::string_view text) { return *parse_host(text).host; }

ServerNameAsked hello(std::string_view name, bool ech = false) { return ServerNameAsked{true, name, ech, {}}; }

TEST(CheckServerName, TheAdmittedNameOrNoNameGoesThroughABlindTunnel) {
  const auto host = host_of("allowed.test");
  EXPECT_TRUE(check_server_name(host, false, hello("allowed.test"), TlsEnd::upstream, "as").lets_through());
  EXPECT_TRUE(check_server_name(host, false, hello(""), TlsEnd::upstream, "as").lets_through());
  EXPECT_TRUE(check_server_name(host, false, hello("allowed.test", true), TlsEnd::upstream, "as").lets_through())
      << "GREASE ECH with the admitted name passes";
}

TEST(CheckServerName, AnotherNameIsDomainFrontingOnEitherEndAndInEveryMode) {
  const auto host = host_of("allowed.test");
  for (auto end : {TlsEnd::upstream, TlsEnd::netbox}) {
    const auto d = check_server_name(host, false, hello("front.test"), end, "the name");
    EXPECT_EQ(d.verdict, Verdict::deny);
    EXPECT_EQ(d.rule, "sni");
    EXPECT_EQ(d.reason,
              "the TLS ClientHello asks for the server name front.test, not allowed.test, the name (domain fronting)");
  }
  // An ECH extension (GREASE or real) does not excuse the outer name: a server that does
  // not do ECH serves it (found by a review: any bytes in extension 0xfe0d let this pass).
  const auto ech = check_server_name(host, false, hello("front.test", true), TlsEnd::upstream, "the name");
  EXPECT_EQ(ech.verdict, Verdict::deny);
  EXPECT_THAT(ech.reason, HasSubstr("(domain fronting; an Encrypted Client Hello's outer name must be it too)"));
}

TEST(CheckServerName, AnUnreadableHelloIsRefusedWhenThereIsANameToCompare) {
  const auto host = host_of("allowed.test");
  const ServerNameAsked bad{false, "", false, "bad server_name"};
  for (auto end : {TlsEnd::upstream, TlsEnd::netbox}) {
    const auto d = check_server_name(host, false, bad, end, "the name");
    EXPECT_EQ(d.verdict, Verdict::deny);
    EXPECT_EQ(d.rule, "sni");
    EXPECT_THAT(d.reason, HasSubstr("cannot be read (bad server_name), so its server name cannot be checked against "
                                    "allowed.test, the name"));
  }
  EXPECT_THAT(check_server_name(host, false, ServerNameAsked{}, TlsEnd::upstream, "n").reason,
              HasSubstr("cannot be read (incomplete)"));
  EXPECT_TRUE(check_server_name(host_of("127.0.0.1"), false, bad, TlsEnd::upstream, "n").lets_through())
      << "a literal on a blind tunnel has no name to compare";
  EXPECT_EQ(check_server_name(host_of("127.0.0.1"), false, bad, TlsEnd::netbox, "n").verdict, Verdict::deny)
      << "netbox's own TLS reads the hello whatever the host";
}

TEST(CheckServerName, NetboxsOwnTlsWantsTheAdmittedNameUnlessItStandsForAnAddress) {
  const auto host = host_of("allowed.test");
  const auto none = check_server_name(host, false, hello(""), TlsEnd::netbox, "the name");
  EXPECT_EQ(none.verdict, Verdict::deny);
  EXPECT_THAT(none.reason, HasSubstr("asks for no server name, not allowed.test"));
  EXPECT_TRUE(check_server_name(host, true, hello(""), TlsEnd::netbox, "n").lets_through())
      << "a name from the DNS view's address: the agent may not know it";
  EXPECT_TRUE(check_server_name(host_of("127.0.0.1"), false, hello(""), TlsEnd::netbox, "n").lets_through());
  EXPECT_EQ(check_server_name(host_of("127.0.0.1"), false, hello("evil.test"), TlsEnd::netbox, "n").verdict,
            Verdict::deny);
  EXPECT_TRUE(check_server_name(host_of("127.0.0.1"), false, hello("evil.test"), TlsEnd::upstream, "n").lets_through());
}

// The plain-HTTP twin of the fronting check: inside a connection admitted for a host, a
// request may name only that host (issue 23, item 3: this comparison was the proxy's).
TEST(CheckRequestHost, TheAdmittedNameGoesAnotherIsFrontingInEveryMode) {
  const auto host = host_of("allowed.test");
  EXPECT_TRUE(check_request_host(host, false, "allowed.test").plain_allow());
  const auto other = check_request_host(host, false, "front.test");
  EXPECT_EQ(other.verdict, Verdict::deny) << "no profile, no mode: a report would let the fronted request through";
  EXPECT_EQ(other.rule, "host");
  EXPECT_EQ(other.reason, "the Host header names front.test, not allowed.test, the name this connection was admitted for");
  EXPECT_EQ(check_request_host(host, false, "").verdict, Verdict::deny) << "an empty name is another name";
}

TEST(CheckRequestHost, AnAbsoluteTargetIsRefusedEvenForALiteralWhoseHostHeaderCannotDisagree) {
  for (const char* admitted : {"allowed.test", "127.0.0.1"}) {
    const auto d = check_request_host(host_of(admitted), true, admitted);
    EXPECT_EQ(d.verdict, Verdict::deny) << admitted;
    EXPECT_EQ(d.rule, "host");
    EXPECT_THAT(d.reason, HasSubstr("absolute form; inside a connection admitted for " + std::string(admitted)));
  }
  EXPECT_TRUE(check_request_host(host_of("127.0.0.1"), false, "evil.test").lets_through())
      << "a literal has no name to disagree with";
}

// A rule that refuses or checks bodies on a path, then a broader one that allows: a
// server that routes /MCP, /mcp/ or /mcp;x to /mcp (Express ignores case and a trailing
// slash by default; Tomcat and Spring drop ;parameters) would get a body no rule checked.
// Such a spelling is refused, naming the rule it would have escaped.
TEST(DecideRequestSpelling, AnotherSpellingOfARulesPathDoesNotEscapeItToALaterRule) {
  const Policy p = parse_policy(R"({"version": 1, "allow": ["tools.test"], "rules": [
    {"host": "tools.test", "methods": ["POST"], "paths": ["/mcp"], "action": "allow",
     "jsonrpc": {"methods": ["tools/call"], "tools": {"search": {}}}},
    {"host": "tools.test", "paths": ["/admin/*"], "action": "deny"},
    {"host": "tools.test", "action": "allow"}]})",
                                "p.json");
  const Admitted admitted{"tools.test", 443, Decision{Verdict::allow, "allow[0] tools.test", ""}};
  for (const char* path : {"/MCP", "/mcp/", "/mcp;x", "/Mcp/;a"}) {
    const auto r = decide_request(p.base, admitted, "POST", path, BodyChecks::caller_checks);
    EXPECT_EQ(r.status, 403u) << path;
    EXPECT_EQ(r.decision.rule.rfind("rules[0]", 0), 0u) << path << ": " << r.decision.rule;
    EXPECT_THAT(r.decision.reason, HasSubstr("checks the bodies of a path a server may read this one as")) << path;
  }
  const auto deny = decide_request(p.base, admitted, "GET", "/ADMIN/users", BodyChecks::caller_checks);
  EXPECT_EQ(deny.status, 403u);
  EXPECT_EQ(deny.decision.rule.rfind("rules[1]", 0), 0u) << deny.decision.rule;
  // The rule's own spelling gets its body check; other paths and methods the catch-all.
  const auto exact = decide_request(p.base, admitted, "POST", "/mcp", BodyChecks::caller_checks);
  EXPECT_FALSE(exact.refused());
  EXPECT_EQ(exact.body_rule, &p.base.rules[0]);
  for (const char* path : {"/mcpx", "/other", "/adminx"}) {
    const auto r = decide_request(p.base, admitted, "POST", path, BodyChecks::caller_checks);
    EXPECT_FALSE(r.refused()) << path << ": " << r.decision.reason;
  }
  EXPECT_FALSE(decide_request(p.base, admitted, "GET", "/MCP", BodyChecks::caller_checks).refused())
      << "the body rule is POST's alone";
}

}  // namespace
}  // namespace netbox::policy
