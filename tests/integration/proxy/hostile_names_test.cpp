// Hostile host names in request targets and CONNECT authorities: NUL and control bytes,
// invalid UTF-8, IPv6 zone ids, userinfo, percent-encoding, malformed numbers are refused
// with a 400 that names the problem; case, a trailing dot, IDN and the odd IPv4 forms are
// normalised to exactly one host, which is what the policy matches, what the audit row
// records, and what the upstream sees in Host.
#include "proxy_fixture.hpp"

#include <nlohmann/json.hpp>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

class HostileNames : public ProxyTest {
 protected:
  std::string p() const { return std::to_string(upstream.port()); }

  void expect_refused(const std::string& target, bool connect, const std::string& fragment) {
    SCOPED_TRACE(target);
    const auto conns = upstream.connections();
    const auto rows_before = read_rows().size();
    ProxyConnection c(port, 10s);
    const auto r = c.send((connect ? "CONNECT " : "GET ") + target + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n",
                          connect);
    EXPECT_EQ(r.status, 400) << r.error << r.body;
    EXPECT_EQ(r.header("x-netbox-decision"), "error");
    EXPECT_NE(r.header("x-netbox-reason").find(fragment), std::string::npos) << r.header("x-netbox-reason");
    EXPECT_TRUE(c.closed_within(5s));
    const auto all = rows();
    ASSERT_EQ(all.size(), rows_before + 1);
    EXPECT_EQ(all.back().status, 400);
    EXPECT_NE(all.back().reason.find(fragment), std::string::npos) << all.back().reason;
    EXPECT_EQ(upstream.connections(), conns) << "a refused name reached the upstream";
  }

  // The upstream's echo of a forwarded GET.
  nlohmann::json echo_through(const std::string& url) {
    const auto r = proxy_get(port, url);
    EXPECT_EQ(r.status, 200) << url << ": " << r.body;
    if (r.status != 200) return nlohmann::json::object();
    return nlohmann::json::parse(r.body);
  }
};

TEST_F(HostileNames, BadBytesZoneIdsUserinfoAndEscapesAreRefusedNamingTheProblem) {
  start_proxy(base_policy(R"("allow": ["upstream.test", "127.0.0.1"])"));
  const std::string port_part = ":" + p();
  for (bool connect : {false, true}) {
    auto target = [&](const std::string& authority) {
      return connect ? authority : "http://" + authority + "/x";
    };
    expect_refused(target(std::string("upstream.te\0st", 14) + port_part), connect, "not allowed in a URL");
    expect_refused(target("upstream.te\x01st" + port_part), connect, "not allowed in a URL");
    expect_refused(target("\xff\xfe.test" + port_part), connect, "not valid UTF-8");
    expect_refused(target("\xc0\xae.test" + port_part), connect, "not valid UTF-8");  // overlong '.'
    expect_refused(target("[fe80::1%25eth0]" + port_part), connect, "zone ids");
    expect_refused(target("[fe80::1%eth0]" + port_part), connect, "zone ids");
    expect_refused(target("user:pw@upstream.test" + port_part), connect, "userinfo");
    expect_refused(target("upstream.test@127.0.0.1" + port_part), connect, "userinfo");
    expect_refused(target("%31%32%37.0.0.1" + port_part), connect, "percent-encoding");
    expect_refused(target("upstream%2etest" + port_part), connect, "percent-encoding");
    expect_refused(target("1.2.3.256" + port_part), connect, "not a valid one");
    expect_refused(target("0x7f.1.1.1.1" + port_part), connect, "not a valid one");
    expect_refused(target("upstream.test.." + port_part), connect, "'upstream.test.");
    expect_refused(target("[upstream.test]" + port_part), connect, "IPv6");
  }
  // The row of a userinfo refusal names the real destination, not the decoy.
  expect_refused("http://upstream.test@127.0.0.1:" + p() + "/", false, "userinfo");
  EXPECT_EQ(last_row().host, "127.0.0.1");
  EXPECT_EQ(upstream.requests(), 0U);
}

TEST_F(HostileNames, CaseTrailingDotAndIdnBecomeOneCanonicalName) {
  start_proxy(base_policy(R"("allow": ["upstream.test", "bücher.test"], "deny": ["denied.test"],
                              "resolve": {"upstream.test": ["127.0.0.1"], "denied.test": ["127.0.0.1"],
                                          "xn--bcher-kva.test": ["127.0.0.1"]})"));
  for (const std::string spelled : {"UPSTREAM.Test.", "upstream.test.", "UpStReAm.TeSt"}) {
    auto j = echo_through("http://" + spelled + ":" + p() + "/echo");
    EXPECT_EQ(j.value("host", ""), "upstream.test:" + p()) << spelled;
    EXPECT_EQ(last_row().host, "upstream.test");
  }
  auto j = echo_through("http://B\xc3\x9c" "CHER.test:" + p() + "/echo");  // "BÜCHER.test"
  EXPECT_EQ(j.value("host", ""), "xn--bcher-kva.test:" + p());
  EXPECT_EQ(last_row().host, "xn--bcher-kva.test");

  for (const std::string spelled : {"DENIED.TEST.", "Denied.Test"}) {
    const auto r = proxy_get(port, "http://" + spelled + ":" + p() + "/");
    EXPECT_EQ(r.status, 403) << spelled;
    const auto row = last_row();
    EXPECT_EQ(row.host, "denied.test");
    EXPECT_EQ(row.rule, "deny[0] denied.test");
  }
  // CONNECT authorities are normalised the same way.
  ProxyConnection c(port);
  const auto r = c.send("CONNECT UPSTREAM.TEST.:" + p() + " HTTP/1.1\r\nHost: x\r\n\r\n", true);
  EXPECT_EQ(r.status, 200);
  c.shutdown_send();
  EXPECT_TRUE(c.closed_within(5s));
  EXPECT_EQ(last_row().host, "upstream.test");
  EXPECT_EQ(last_row().kind, "connect");
}

// Every spelling of 127.0.0.1 is 127.0.0.1: matched by the rule for it (here a deny
// inside an allowed /8), never slipping past as a name.
TEST_F(HostileNames, OddIpv4FormsAreTheAddressTheyMeanForRulesAuditAndHost) {
  const std::vector<std::string> forms{"0x7f.1", "2130706433", "0177.0.0.1", "127.1", "0x7f000001", "0X7F.0.0.01",
                                       "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1" /* fullwidth 127 */};
  start_proxy(base_policy(R"("allow": ["127.0.0.0/8"], "deny": ["127.0.0.1"])"));
  for (const auto& f : forms) {
    SCOPED_TRACE(f);
    EXPECT_EQ(proxy_get(port, "http://" + f + ":" + p() + "/").status, 403);
    const auto row = last_row();
    EXPECT_EQ(row.host, "127.0.0.1");
    EXPECT_EQ(row.rule, "deny[0] 127.0.0.1");
    ProxyConnection c(port);
    EXPECT_EQ(c.send("CONNECT " + f + ":" + p() + " HTTP/1.1\r\n\r\n", true).status, 403);
    EXPECT_EQ(last_row().host, "127.0.0.1");
  }
  EXPECT_EQ(upstream.connections(), 0U);
  stop_proxy();

  start_proxy(base_policy(R"("allow": ["127.0.0.1"])"));
  for (const auto& f : forms) {
    SCOPED_TRACE(f);
    auto j = echo_through("http://" + f + ":" + p() + "/echo");
    EXPECT_EQ(j.value("host", ""), "127.0.0.1:" + p());
    EXPECT_EQ(last_row().host, "127.0.0.1");
  }
}

}  // namespace
}  // namespace netbox::test
