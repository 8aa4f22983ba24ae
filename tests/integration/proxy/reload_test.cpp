// Policy reloads: a good file takes effect for new connections and is recorded; a bad
// one is refused with its reason recorded, and the old policy keeps deciding.
#include "proxy_fixture.hpp"

#include <fstream>

namespace netbox::test {
namespace {

TEST_F(ProxyTest, GoodReloadTakesEffectAndIsRecorded) {
  start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  const auto later = "http://later.test:" + std::to_string(upstream.port()) + "/";
  EXPECT_EQ(proxy_get(port, later).status, 403);
  dir.write("policy.json", base_policy(R"("allow": ["upstream.test", "later.test"],
      "resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, later).status, 200);
  auto ev = events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev.front().kind, "policy_load");  // the start
  EXPECT_EQ(ev.back().kind, "policy_load");   // the reload
  EXPECT_NE(ev.back().message.find("policy.json"), std::string::npos) << ev.back().message;
  EXPECT_EQ(server->counters().policy_reloads_ok, 1u);
}

TEST_F(ProxyTest, BadReloadIsRefusedRecordedAndTheOldPolicyStays) {
  start_proxy(base_policy());
  dir.write("policy.json", R"({"version": 1, "allow": ["a.*.test"]})");
  EXPECT_FALSE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);  // still the old policy
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("policy.json"), std::string::npos) << ev.back().message;
  EXPECT_NE(ev.back().message.find("allow"), std::string::npos) << ev.back().message;
  EXPECT_EQ(server->counters().policy_reloads_failed, 1u);
}

TEST_F(ProxyTest, KeepAliveConnectionKeepsThePolicyItStartedWith) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  const auto req = "GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n";
  EXPECT_EQ(c.send(req).status, 200);
  dir.write("policy.json", base_policy(R"("allow": ["nothing.test"])"));
  ASSERT_TRUE(server->reload_policy());
  EXPECT_EQ(c.send(req).status, 200);                          // the open connection
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403);    // a new one
}


// A reload must never widen what a registered agent may do: dropping the profile it was
// registered with would decide its requests with the (wider) top level. Refused, kept,
// recorded and counted (issue 12, item 16).
TEST_F(ProxyTest, ReloadRemovingARegisteredAgentsProfileIsRefusedAndTheAgentStaysConfined) {
  start_proxy(base_policy(R"("agents": {"strict": {"allow": ["nothing.test"]}})"));
  server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict");
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403);

  dir.write("policy.json", base_policy());  // the same top level, no agents.strict
  EXPECT_FALSE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403) << "the reload widened the agent's profile";
  EXPECT_EQ(server->counters().policy_reloads_failed, 1u);
  EXPECT_EQ(server->counters().policy_reloads_ok, 0u);
  ASSERT_EQ(server->policy()->agents.count("strict"), 1u);
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("confined"), std::string::npos) << ev.back().message;
  EXPECT_NE(ev.back().message.find("strict"), std::string::npos) << ev.back().message;

  // Once the agent has left, the same file loads.
  server->unregister_agent(boost::asio::ip::make_address("127.0.0.1"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
}

TEST_F(ProxyTest, AnAgentCannotBeRegisteredWithAProfileThePolicyLacks) {
  start_proxy(base_policy());
  EXPECT_THROW(server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict"),
               std::invalid_argument);
}

TEST_F(ProxyTest, ReloadKeepingARegisteredAgentsProfileTakesEffect) {
  start_proxy(base_policy(R"("agents": {"strict": {"allow": ["nothing.test"]}})"));
  server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict");
  dir.write("policy.json", base_policy(R"("agents": {"strict": {"allow": ["upstream.test"]}})"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
}

}  // namespace
}  // namespace netbox::test
