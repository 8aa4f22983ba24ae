// decide_destination: the merge of the name's decision with its addresses' decisions
// (and netbox's own endpoints), the one place the proxy gets a destination's verdict from.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace netbox::policy;
using boost::asio::ip::address;
using boost::asio::ip::make_address;

namespace {

Policy load(const std::string& json) { return parse_policy(json, "test.json"); }

Host host(std::string_view raw) { return *parse_host(raw).host; }

Destination destination(const Policy& p, std::string_view h, uint16_t port, std::vector<address> addrs,
                        const OwnEndpoint& own = {}) {
  const Host hh = host(h);
  return decide_destination(p.base, hh, port, decide_name(p.base, hh, port), addrs, own);
}

const char* kPolicy = R"({"version":1, "allow":["api.example.com"], "ports":[443]})";
const char* kReport = R"({"version":1, "mode":"report", "allow":["api.example.com"], "ports":[443]})";

TEST(DecideDestination, RefusedAddressesAreDroppedAndTheRestKeepTheirOrder) {
  const auto p = load(kPolicy);
  const auto d = destination(p, "api.example.com", 443,
                             {make_address("10.0.0.1"), make_address("93.184.216.34"), make_address("2606:2800::1")});
  EXPECT_EQ(d.decision.verdict, Verdict::allow);
  EXPECT_EQ(d.decision.rule, "allow[0] api.example.com");
  EXPECT_EQ(d.allowed, (std::vector<address>{make_address("93.184.216.34"), make_address("2606:2800::1")}));
  EXPECT_EQ(d.shown, make_address("93.184.216.34")) << "the row names the address dialled first";
}

TEST(DecideDestination, EveryAddressRefusedGivesTheFirstRefusalAndItsAddress) {
  const auto p = load(kPolicy);
  const auto d = destination(p, "api.example.com", 443, {make_address("10.0.0.1"), make_address("127.0.0.1")});
  EXPECT_EQ(d.decision.verdict, Verdict::deny);
  EXPECT_EQ(d.decision.rule, "internal");
  EXPECT_NE(d.decision.reason.find("10.0.0.1"), std::string::npos) << d.decision.reason;
  EXPECT_TRUE(d.allowed.empty());
  EXPECT_EQ(d.shown, make_address("10.0.0.1"));
}

TEST(DecideDestination, AReportOnAnAddressWinsOverTheNamesAllow) {
  const auto p = load(R"({"version":1, "mode":"report", "allow":["api.example.com"], "deny":["203.0.113.0/24"],
                          "ports":[443]})");
  const auto d = destination(p, "api.example.com", 443, {make_address("203.0.113.1")});
  EXPECT_EQ(d.decision.verdict, Verdict::report);
  EXPECT_EQ(d.decision.rule, "deny[0] 203.0.113.0/24");
  EXPECT_EQ(d.allowed, (std::vector<address>{make_address("203.0.113.1")})) << "report mode lets it through";
}

// An internal address is no report: it stays refused in report mode (decide.cpp).
TEST(DecideDestination, AnInternalAddressStaysRefusedInReportMode) {
  const auto p = load(kReport);
  const auto d = destination(p, "api.example.com", 443, {make_address("169.254.169.254")});
  EXPECT_EQ(d.decision.verdict, Verdict::deny);
  EXPECT_EQ(d.decision.rule, "internal");
  EXPECT_TRUE(d.allowed.empty());
}

TEST(DecideDestination, AReportOnTheNameWinsOverAnAddressAllow) {
  const auto p = load(kPolicy);
  const Host h = host("api.example.com");
  const Decision name{Verdict::report, "ports", "port 8443 is not in ports [443]"};
  const std::vector<address> addrs{make_address("93.184.216.34")};
  const auto d = decide_destination(p.base, h, 443, name, addrs, {});
  EXPECT_EQ(d.decision.verdict, Verdict::report);
  EXPECT_EQ(d.decision.rule, "ports");
  EXPECT_EQ(d.allowed.size(), 1U);
}

TEST(DecideDestination, NetboxsOwnEndpointIsRefusedEvenInReportMode) {
  const auto p = load(R"({"version":1, "mode":"report", "allow":["api.example.com"], "ports":[443],
                          "internal": {"allow": ["127.0.0.0/8"]}})");
  const OwnEndpoint own = [](const address& a, uint16_t port) {
    return a == make_address("127.0.0.1") && port == 443 ? std::string("127.0.0.1:443 is netbox's proxy")
                                                          : std::string();
  };
  auto d = destination(p, "api.example.com", 443, {make_address("127.0.0.1")}, own);
  EXPECT_EQ(d.decision.verdict, Verdict::deny);
  EXPECT_EQ(d.decision.rule, "netbox");
  EXPECT_EQ(d.decision.reason, "127.0.0.1:443 is netbox's proxy");
  // Another address of the same name still goes, without the refused one.
  d = destination(p, "api.example.com", 443, {make_address("127.0.0.1"), make_address("127.0.0.2")}, own);
  EXPECT_EQ(d.allowed, (std::vector<address>{make_address("127.0.0.2")}));
}

TEST(DecideDestination, NoAddressAtAllIsRefused) {
  const auto p = load(kPolicy);
  const auto d = destination(p, "api.example.com", 443, {});
  EXPECT_EQ(d.decision.verdict, Verdict::deny);
  EXPECT_TRUE(d.allowed.empty());
  EXPECT_FALSE(d.shown);
}

}  // namespace
