// Every internal range, plain and in each IPv6 form that embeds an IPv4 address.
#include "netbox/policy/decide.hpp"

#include <gtest/gtest.h>

using boost::asio::ip::make_address;
using netbox::policy::internal_range;

namespace {
std::string range(const char* a) { return internal_range(make_address(a)); }
}  // namespace

TEST(InternalRange, IPv4Ranges) {
  EXPECT_EQ(range("0.0.0.0"), "this network, 0.0.0.0/8");
  EXPECT_EQ(range("0.255.1.1"), "this network, 0.0.0.0/8");
  EXPECT_EQ(range("10.0.0.5"), "RFC 1918");
  EXPECT_EQ(range("10.255.255.255"), "RFC 1918");
  EXPECT_EQ(range("100.64.0.1"), "carrier-grade NAT, RFC 6598");
  EXPECT_EQ(range("100.127.255.255"), "carrier-grade NAT, RFC 6598");
  EXPECT_EQ(range("127.0.0.1"), "loopback");
  EXPECT_EQ(range("127.255.0.9"), "loopback");
  EXPECT_EQ(range("169.254.1.1"), "link-local");
  EXPECT_EQ(range("169.254.169.254"), "cloud metadata");
  EXPECT_EQ(range("172.16.0.1"), "RFC 1918");
  EXPECT_EQ(range("172.31.255.254"), "RFC 1918");
  EXPECT_EQ(range("192.168.1.1"), "RFC 1918");
  EXPECT_EQ(range("224.0.0.1"), "multicast");
  EXPECT_EQ(range("239.255.255.250"), "multicast");
  EXPECT_EQ(range("240.0.0.1"), "reserved, 240.0.0.0/4");
  EXPECT_EQ(range("255.255.255.255"), "broadcast");
}

TEST(InternalRange, BordersOfRangesArePublic) {
  for (const char* pub : {"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
                          "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0",
                          "192.167.255.255", "192.169.0.0", "223.255.255.255", "93.184.216.34", "203.0.113.9"})
    EXPECT_EQ(range(pub), "") << pub;
}

TEST(InternalRange, IPv6Ranges) {
  EXPECT_EQ(range("::1"), "loopback");
  EXPECT_EQ(range("::"), "unspecified address ::");
  EXPECT_EQ(range("fc00::1"), "unique local, fc00::/7");
  EXPECT_EQ(range("fdff:ffff::1"), "unique local, fc00::/7");
  EXPECT_EQ(range("2001:2::5"), "benchmarking, 2001:2::/48");
  EXPECT_EQ(range("2001:2:0:ffff:ffff::1"), "benchmarking, 2001:2::/48");
  EXPECT_EQ(range("2001:3::1"), "") << "the border is public";
  EXPECT_EQ(range("fe80::1"), "link-local");
  EXPECT_EQ(range("febf::1"), "link-local");
  EXPECT_EQ(range("ff02::1"), "multicast");
  EXPECT_EQ(range("fd00:ec2::254"), "cloud metadata");
  EXPECT_EQ(range("2606:4700::1111"), "");
  EXPECT_EQ(range("fec0::1"), "site-local, deprecated");
}

TEST(InternalRange, IPv4MappedFormsOfEveryV4Range) {
  EXPECT_EQ(range("::ffff:127.0.0.1"), "IPv4-mapped loopback");
  EXPECT_EQ(range("::ffff:10.0.0.5"), "IPv4-mapped RFC 1918");
  EXPECT_EQ(range("::ffff:172.16.0.1"), "IPv4-mapped RFC 1918");
  EXPECT_EQ(range("::ffff:192.168.0.1"), "IPv4-mapped RFC 1918");
  EXPECT_EQ(range("::ffff:169.254.169.254"), "IPv4-mapped cloud metadata");
  EXPECT_EQ(range("::ffff:169.254.0.1"), "IPv4-mapped link-local");
  EXPECT_EQ(range("::ffff:100.64.0.1"), "IPv4-mapped carrier-grade NAT, RFC 6598");
  EXPECT_EQ(range("::ffff:0.0.0.0"), "IPv4-mapped this network, 0.0.0.0/8");
  EXPECT_EQ(range("::ffff:224.0.0.1"), "IPv4-mapped multicast");
  EXPECT_EQ(range("::ffff:93.184.216.34"), "");
}

TEST(InternalRange, OtherEmbeddedForms) {
  EXPECT_EQ(range("64:ff9b::a00:5"), "NAT64 RFC 1918");           // 10.0.0.5
  EXPECT_EQ(range("64:ff9b::7f00:1"), "NAT64 loopback");
  EXPECT_EQ(range("64:ff9b:1::a9fe:a9fe"), "NAT64 cloud metadata");
  EXPECT_EQ(range("2002:7f00:1::"), "6to4 loopback");
  EXPECT_EQ(range("2002:c0a8:101::1"), "6to4 RFC 1918");
  EXPECT_EQ(range("::127.0.0.1"), "IPv4-compatible loopback");
  EXPECT_EQ(range("::10.1.2.3"), "IPv4-compatible RFC 1918");
  EXPECT_EQ(range("::8.8.8.8"), "IPv4-compatible, deprecated");
  EXPECT_EQ(range("::ffff:0:a00:5"), "IPv4-translated RFC 1918");
  EXPECT_EQ(range("2001:0:4136:e378:8000:63bf:80ff:fffe"), "Teredo loopback");  // ~0x80fffffe = 127.0.0.1
  EXPECT_EQ(range("64:ff9b::5db8:d822"), "");  // NAT64 of a public address
}
