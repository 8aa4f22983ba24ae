#include "netbox/dns/synthetic_pool.hpp"

#include <gmock/gmock.h>

#include <set>

namespace netbox::dns {
namespace {

using boost::asio::ip::make_address;
using namespace std::chrono_literals;
using Clock = SyntheticPool::Clock;

TEST(SyntheticPool, ANameKeepsItsAddressAndTheAddressLeadsBackToIt) {
  SyntheticPool pool(make_address("198.18.0.0"), 1u << 17, 3600s);
  const auto t = Clock::now();
  auto a = pool.address_for("api.example.test", t);
  auto b = pool.address_for("pypi.org", t);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(pool.address_for("api.example.test", t + 10s), a);
  EXPECT_EQ(pool.name_for(*a, t), "api.example.test");
  EXPECT_EQ(pool.name_for(*b, t), "pypi.org");
  EXPECT_TRUE(pool.contains(*a));
  EXPECT_FALSE(pool.contains(make_address("198.20.0.0")));
  EXPECT_FALSE(pool.name_for(make_address("198.18.200.1"), t)) << "never handed out";
  EXPECT_FALSE(pool.name_for(make_address("10.0.0.1"), t));
}

TEST(SyntheticPool, AnExpiredMappingIsForgottenButAHeldOneNeverIsNorGivenAway) {
  SyntheticPool pool(make_address("198.18.0.0"), 2, 60s);
  const auto t = Clock::now();
  auto a = *pool.address_for("a.test", t);
  auto b = *pool.address_for("b.test", t);
  EXPECT_FALSE(pool.address_for("c.test", t)) << "full: no name is silently remapped";
  // A connection to a.test is open when its mapping would end.
  EXPECT_EQ(pool.hold(a, t + 30s), "a.test");
  EXPECT_EQ(pool.name_for(a, t + 120s), "a.test");
  EXPECT_FALSE(pool.name_for(b, t + 120s));
  EXPECT_FALSE(pool.hold(b, t + 120s)) << "an ended mapping cannot be dialled";
  // c.test gets b's address, never a's.
  EXPECT_EQ(pool.address_for("c.test", t + 120s), b);
  EXPECT_EQ(pool.name_for(b, t + 120s), "c.test");
  EXPECT_FALSE(pool.address_for("d.test", t + 120s));
  pool.release(a);
  EXPECT_EQ(pool.address_for("d.test", t + 120s), a);
  EXPECT_EQ(pool.mapped(), 2u);
}

TEST(SyntheticPool, AskingAgainKeepsAMappingAlive) {
  SyntheticPool pool(make_address("198.18.0.0"), 1, 60s);
  const auto t = Clock::now();
  auto a = *pool.address_for("a.test", t);
  EXPECT_EQ(pool.address_for("a.test", t + 50s), a);
  EXPECT_EQ(pool.name_for(a, t + 100s), "a.test") << "refreshed at 50 s";
  EXPECT_FALSE(pool.address_for("b.test", t + 100s));
}

TEST(SyntheticPool, IPv6PoolsWork) {
  SyntheticPool pool(make_address("fd00:6e62::"), 1u << 20, 60s);
  const auto t = Clock::now();
  std::set<std::string> seen;
  boost::asio::ip::address last;
  for (int i = 0; i < 300; ++i) {
    last = *pool.address_for("h" + std::to_string(i) + ".test", t);
    seen.insert(last.to_string());
  }
  EXPECT_EQ(seen.size(), 300u);
  EXPECT_EQ(last.to_string(), "fd00:6e62::12b") << "299 after the first, carried across bytes";
  EXPECT_EQ(pool.name_for(last, t), "h299.test");
  EXPECT_FALSE(pool.contains(make_address("fd00:6e63::1")));
  EXPECT_FALSE(pool.contains(make_address("198.18.0.1")));
}

}  // namespace
}  // namespace netbox::dns
