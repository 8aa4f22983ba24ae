#include "netbox/policy/cidr.hpp"

#include <gtest/gtest.h>

using netbox::policy::Cidr;
using boost::asio::ip::make_address;

TEST(Cidr, ParsesV4AndV6) {
  auto a = Cidr::parse("10.0.0.0/8");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->prefix, 8U);
  EXPECT_EQ(a->to_string(), "10.0.0.0/8");
  auto b = Cidr::parse("fc00::/7");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->to_string(), "fc00::/7");
}

TEST(Cidr, BareAddressIsFullLength) {
  EXPECT_EQ(Cidr::parse("198.51.100.7")->prefix, 32U);
  EXPECT_EQ(Cidr::parse("::1")->prefix, 128U);
}

TEST(Cidr, RefusesHostBitsPrefixOutOfRangeAndJunk) {
  for (const char* bad : {"10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/-1",
                          "10.0.0.0/+8", "127.1/32", "0177.0.0.1", "fe80::%eth0/64", "example.com/24", "",
                          "10.0.0.0/8/8", "1.2.3.256/32", "fc00::1/7"})
    EXPECT_FALSE(Cidr::parse(bad)) << bad;
}

TEST(Cidr, ContainsItsAddressesOnly) {
  auto c = *Cidr::parse("172.16.0.0/12");
  EXPECT_TRUE(c.contains(make_address("172.16.0.1")));
  EXPECT_TRUE(c.contains(make_address("172.31.255.255")));
  EXPECT_FALSE(c.contains(make_address("172.32.0.0")));
  EXPECT_FALSE(c.contains(make_address("::1")));
  auto zero = *Cidr::parse("0.0.0.0/0");
  EXPECT_TRUE(zero.contains(make_address("8.8.8.8")));
  auto v6 = *Cidr::parse("2001:db8::/32");
  EXPECT_TRUE(v6.contains(make_address("2001:db8:ffff::1")));
  EXPECT_FALSE(v6.contains(make_address("2001:db9::1")));
  EXPECT_FALSE(v6.contains(make_address("10.0.0.1")));
}

TEST(Cidr, V4RangeMatchesIPv4MappedForm) {
  auto c = *Cidr::parse("203.0.113.0/24");
  EXPECT_TRUE(c.contains(make_address("::ffff:203.0.113.9")));
  EXPECT_FALSE(c.contains(make_address("::ffff:203.0.114.9")));
}

TEST(Cidr, MappedV6RangeMatchesPlainV4) {
  auto c = *Cidr::parse("::ffff:10.0.0.0/104");
  EXPECT_TRUE(c.contains(make_address("10.1.2.3")));
  EXPECT_FALSE(c.contains(make_address("11.1.2.3")));
}

// The next block of a size, for handing out pools: carries across bytes, and has none
// past the end of the address space.
TEST(Cidr, NextIsTheFollowingBlockOfTheSameSize) {
  const auto next = [](const char* c) {
    auto n = Cidr::parse(c)->next();
    return n ? n->to_string() : std::string("none");
  };
  EXPECT_EQ(next("198.18.4.0/22"), "198.18.8.0/22");
  EXPECT_EQ(next("198.18.252.0/22"), "198.19.0.0/22");
  EXPECT_EQ(next("10.0.0.7/32"), "10.0.0.8/32");
  EXPECT_EQ(next("255.255.252.0/22"), "none");
  EXPECT_EQ(next("2001:2:0:2b5:ffff::/80"), "2001:2:0:2b6::/80");
  EXPECT_EQ(next("2001:2:0:7::/64"), "2001:2:0:8::/64");
  EXPECT_EQ(next("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120"), "none");
  EXPECT_EQ(next("0.0.0.0/0"), "none");
}
