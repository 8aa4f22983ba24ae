// Issue 22 item 1: the peer -> identity lookup (proxy/src/agents/agent_registry.hpp). On an
// agent's own listener only that agent's registered addresses are anyone: another source
// is refused, never `anonymous`; the proxy's shared listeners keep anonymous clients.
#include "agents/agent_registry.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

namespace ip = boost::asio::ip;

ip::tcp::endpoint ep(const char* a, unsigned short port) { return {ip::make_address(a), port}; }

TEST(AgentRegistryIdentify, AnAgentsOwnListenerKnowsOnlyItsAddresses) {
  AgentRegistry r;
  r.add(ip::make_address("10.0.0.2"), AgentIdentity{"a1", "restricted", nullptr, {}});
  r.add(ip::make_address("fd00::2"), AgentIdentity{"a1", "restricted", nullptr, ip::make_address("10.0.0.2")});
  r.add(ip::make_address("10.0.0.6"), AgentIdentity{"a2", "", nullptr, {}});
  const auto capture = ep("10.0.0.1", 4000), capture6 = ep("fd00::1", 4000);
  r.add_link(capture, {ip::make_address("10.0.0.2"), ip::make_address("fd00::2")});
  r.add_link(capture6, {ip::make_address("10.0.0.2"), ip::make_address("fd00::2")});

  EXPECT_EQ(r.identify(capture, ip::make_address("10.0.0.2"))->agent, "a1");
  EXPECT_EQ(r.identify(capture6, ip::make_address("fd00::2"))->agent, "a1");
  // A link-local source the agent bound, and another agent's address: nobody's.
  EXPECT_FALSE(r.identify(capture6, ip::make_address("fe80::1")));
  EXPECT_FALSE(r.identify(capture, ip::make_address("10.0.0.6")));
  EXPECT_FALSE(r.identify(capture, ip::make_address("::ffff:10.0.0.9")));
  // The IPv4-mapped spelling of the agent's address is the agent (dual-stack sockets).
  EXPECT_EQ(r.identify(ep("::ffff:10.0.0.1", 4000), ip::make_address("::ffff:10.0.0.2"))->agent, "a1");
  // Any other listener: unregistered clients are anonymous, as before.
  EXPECT_EQ(r.identify(ep("127.0.0.1", 3128), ip::make_address("fe80::1"))->agent, "anonymous");
  EXPECT_EQ(r.identify(ep("10.0.0.1", 3128), ip::make_address("10.0.0.6"))->agent, "a2");
}

TEST(AgentRegistryIdentify, AConnectionRacingTheAgentsUnregistrationIsNobodys) {
  AgentRegistry r;
  const auto capture = ep("10.0.0.1", 4000);
  r.add_link(capture, {ip::make_address("10.0.0.2")});
  // Its identity gone first (or not yet there): refused, not anonymous.
  EXPECT_FALSE(r.identify(capture, ip::make_address("10.0.0.2")));
  r.add(ip::make_address("10.0.0.2"), AgentIdentity{"a1", "", nullptr, {}});
  EXPECT_TRUE(r.identify(capture, ip::make_address("10.0.0.2")));
  r.remove_link(capture);
  r.remove(ip::make_address("10.0.0.2"));
  EXPECT_EQ(r.identify(capture, ip::make_address("10.0.0.2"))->agent, "anonymous");
}

}  // namespace
}  // namespace netbox::proxy
