// Connection caps as values: which limit refuses, what the refusal cites, and that a slot
// comes back however its token ends.
#include "pipeline/caps.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

policy::Limits limits(std::size_t total, std::size_t per_agent, std::size_t per_host) {
  policy::Limits l;
  l.max_connections = total;
  l.max_connections_per_agent = per_agent;
  l.max_connections_per_host = per_host;
  return l;
}

TEST(Caps, EachLimitRefusesWithItsKindRuleAndNumbers) {
  Caps caps;
  const auto wide = limits(100, 100, 100);
  auto a = caps.acquire("coder", "a.test", "192.0.2.1", limits(1, 100, 100), wide);
  ASSERT_TRUE(a.token);
  EXPECT_EQ(a.kind, CapKind::none);
  auto global = caps.acquire("other", "b.test", "192.0.2.2", limits(1, 100, 100), wide);
  EXPECT_FALSE(global.token);
  EXPECT_EQ(global.kind, CapKind::global);
  EXPECT_EQ(rule_of(global.kind), "limits.max_connections");
  EXPECT_EQ(global.limit, 1U);
  EXPECT_NE(global.reason.find("1 open connections"), std::string::npos) << global.reason;

  auto agent = caps.acquire("coder", "b.test", "192.0.2.2", wide, limits(100, 1, 100));
  EXPECT_EQ(agent.kind, CapKind::per_agent);
  EXPECT_EQ(rule_of(agent.kind), "limits.max_connections_per_agent");
  EXPECT_NE(agent.reason.find("agent coder"), std::string::npos) << agent.reason;

  auto host = caps.acquire("other", "a.test", "192.0.2.9", wide, limits(100, 100, 1));
  EXPECT_EQ(host.kind, CapKind::per_host);
  EXPECT_EQ(rule_of(host.kind), "limits.max_connections_per_host");

  // Another name for the same address shares its bucket.
  auto alias = caps.acquire("other", "alias.test", "192.0.2.1", wide, limits(100, 100, 1));
  EXPECT_EQ(alias.kind, CapKind::per_address);
  EXPECT_EQ(rule_of(alias.kind), "limits.max_connections_per_host");
  EXPECT_NE(alias.reason.find("192.0.2.1"), std::string::npos) << alias.reason;
  EXPECT_EQ(caps.total(), 1U) << "refusals hold no slot";
}

TEST(Caps, ASlotComesBackWhenItsTokenEndsOrMoves) {
  Caps caps;
  const auto one = limits(1, 1, 1);
  {
    auto a = caps.acquire("coder", "a.test", "192.0.2.1", one, one);
    ASSERT_TRUE(a.token);
    CapToken moved = std::move(a.token);
    EXPECT_FALSE(a.token);
    EXPECT_EQ(caps.total(), 1U);
    EXPECT_FALSE(caps.acquire("coder", "a.test", "192.0.2.1", one, one).token);
  }
  EXPECT_EQ(caps.total(), 0U);
  auto again = caps.acquire("coder", "a.test", "192.0.2.1", one, one);
  ASSERT_TRUE(again.token);
  again.token.release();
  again.token.release();  // twice is once
  EXPECT_EQ(caps.total(), 0U);
}

}  // namespace
}  // namespace netbox::proxy
