// parse_host: what an agent names as its destination, normalised or refused.
#include "netbox/policy/host.hpp"

#include <gtest/gtest.h>

using netbox::policy::parse_host;

namespace {

std::string name_of(std::string_view raw) {
  auto h = parse_host(raw);
  EXPECT_TRUE(h) << raw << ": " << h.error.message;
  if (!h) return {};
  EXPECT_FALSE(h.host->is_ip()) << raw;
  return h.host->name;
}

std::string ip_of(std::string_view raw) {
  auto h = parse_host(raw);
  EXPECT_TRUE(h) << raw << ": " << h.error.message;
  if (!h) return {};
  EXPECT_TRUE(h.host->is_ip()) << raw << " was taken as the name " << h.host->name;
  return h.host->is_ip() ? h.host->ip->to_string() : "";
}

std::string refusal(std::string_view raw) {
  auto h = parse_host(raw);
  EXPECT_FALSE(h) << std::string(raw) << " was accepted as " << (h ? h.host->name : "");
  return h ? "" : h.error.message;
}

}  // namespace

TEST(Host, NamesAreLowercased) { EXPECT_EQ(name_of("API.Example.COM"), "api.example.com"); }

TEST(Host, OneTrailingDotIsStripped) { EXPECT_EQ(name_of("example.com."), "example.com"); }

TEST(Host, TwoTrailingDotsAreRefused) { EXPECT_NE(refusal("example.com.."), ""); }

TEST(Host, EmptyLabelsAreRefused) { EXPECT_NE(refusal("a..example.com").find("empty label"), std::string::npos); }

TEST(Host, IdnaNamesBecomePunycode) {
  EXPECT_EQ(name_of("bücher.example"), "xn--bcher-kva.example");
  EXPECT_EQ(name_of("BÜCHER.example"), "xn--bcher-kva.example");
  EXPECT_EQ(name_of("xn--bcher-kva.example"), "xn--bcher-kva.example");
}

TEST(Host, BadIdnaIsRefused) {
  EXPECT_NE(refusal("xn--zz.example").find("internationalised"), std::string::npos);
  EXPECT_NE(refusal("☃.net"), "");
  EXPECT_NE(refusal("-leading-hyphen.example"), "");
}

TEST(Host, InvalidUtf8IsRefused) {
  EXPECT_NE(refusal("caf\xc3.example").find("UTF-8"), std::string::npos);
  EXPECT_NE(refusal("\xc0\xae.example").find("UTF-8"), std::string::npos);  // overlong '.'
}

TEST(Host, EmptyIsRefused) {
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  EXPECT_NE(refusal(".").find("empty"), std::string::npos);
}

TEST(Host, DangerousCharactersAreRefused) {
  EXPECT_NE(refusal(std::string_view("a\0b.example", 11)).find("NUL"), std::string::npos);
  EXPECT_NE(refusal("a\nb.example").find("control"), std::string::npos);
  EXPECT_NE(refusal("a\x7f.example").find("control"), std::string::npos);
  EXPECT_NE(refusal("a b.example").find("space"), std::string::npos);
  EXPECT_NE(refusal("example.com%2f").find("'%'"), std::string::npos);
  EXPECT_NE(refusal("user@example.com").find("'@'"), std::string::npos);
  EXPECT_NE(refusal("example.com/path").find("'/'"), std::string::npos);
  EXPECT_NE(refusal("example.com\\x").find("'\\'"), std::string::npos);
  EXPECT_NE(refusal("exa$mple.com"), "");
  EXPECT_NE(refusal("*.example.com"), "");
}

TEST(Host, IPv6ZoneIdsAreRefused) {
  EXPECT_NE(refusal("fe80::1%eth0").find("%"), std::string::npos);
  EXPECT_NE(refusal("[fe80::1%25eth0]"), "");
}

TEST(Host, DottedQuadIsAnAddress) { EXPECT_EQ(ip_of("93.184.216.34"), "93.184.216.34"); }

TEST(Host, EveryInetAtonFormIsTheAddressItMeans) {
  EXPECT_EQ(ip_of("127.1"), "127.0.0.1");
  EXPECT_EQ(ip_of("127.0.1"), "127.0.0.1");
  EXPECT_EQ(ip_of("2130706433"), "127.0.0.1");
  EXPECT_EQ(ip_of("0x7f000001"), "127.0.0.1");
  EXPECT_EQ(ip_of("0X7F000001"), "127.0.0.1");
  EXPECT_EQ(ip_of("0177.0.0.1"), "127.0.0.1");
  EXPECT_EQ(ip_of("0x7f.1"), "127.0.0.1");
  EXPECT_EQ(ip_of("0x7f.0.0.0x1"), "127.0.0.1");
  EXPECT_EQ(ip_of("0177.0x0.00.1"), "127.0.0.1");
  EXPECT_EQ(ip_of("10.0.0.5."), "10.0.0.5");
  EXPECT_EQ(ip_of("0"), "0.0.0.0");
  EXPECT_EQ(ip_of("4294967295"), "255.255.255.255");
  EXPECT_EQ(ip_of("169.254.43518"), "169.254.169.254");
}

TEST(Host, MalformedNumericFormsAreRefusedNotNames) {
  for (const char* bad : {"1.2.3.256", "08.0.0.1", "0x", "1.2.3.4.5", "4294967296", "0x100000000", "256.1",
                          "1.0x1000000", "1.2.65536", "099", "0xg.1", "example.123", "foo.0x1f", "1.2.3.-1"}) {
    auto h = parse_host(bad);
    EXPECT_FALSE(h) << bad << " was accepted as " << (h ? h.host->name : "");
  }
  EXPECT_NE(refusal("1.2.3.256").find("IPv4"), std::string::npos);
}

TEST(Host, NamesWithNumericLabelsButNotLastAreNames) {
  EXPECT_EQ(name_of("1.2.3.4.nip.example"), "1.2.3.4.nip.example");
  EXPECT_EQ(name_of("0x7f.example"), "0x7f.example");
  EXPECT_EQ(name_of("cafe"), "cafe");
  EXPECT_EQ(name_of("deadbeef.example"), "deadbeef.example");
}

TEST(Host, FullwidthDigitsAreReadAsTheAddressTheyMap) {
  // IDNA maps fullwidth digits to ASCII; the result must not pass as a name.
  EXPECT_EQ(ip_of("\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1"), "127.0.0.1");
}

TEST(Host, IPv6WithAndWithoutBrackets) {
  EXPECT_EQ(ip_of("[::1]"), "::1");
  EXPECT_EQ(ip_of("::1"), "::1");
  EXPECT_EQ(ip_of("[2001:DB8::1]"), "2001:db8::1");
  EXPECT_EQ(ip_of("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
  EXPECT_TRUE(parse_host("::ffff:10.0.0.1").host->ip->is_v6());
}

TEST(Host, BadIPv6IsRefused) {
  EXPECT_NE(refusal("[::1"), "");
  EXPECT_NE(refusal("[example.com]"), "");
  EXPECT_NE(refusal("1::2::3"), "");
  EXPECT_NE(refusal("example.com:443"), "");
  EXPECT_NE(refusal("a]b"), "");
}

TEST(Host, OverlongNamesAndLabelsAreRefused) {
  EXPECT_NE(refusal(std::string(64, 'a') + ".example"), "");
  std::string longname;
  for (int i = 0; i < 60; ++i) longname += "abcd.";
  longname += "example";
  EXPECT_NE(refusal(longname), "");
}

TEST(Host, PlainAsciiNamesFollowIdnaRules) {
  EXPECT_EQ(name_of("_dmarc.example"), "_dmarc.example");
  EXPECT_EQ(name_of("a-b.example"), "a-b.example");
  EXPECT_NE(refusal("ab--cd.example"), "");     // "--" in positions 3-4 is reserved for A-labels
  EXPECT_NE(refusal("trailing-.example"), "");
  EXPECT_NE(refusal("xn--ab.example"), "");     // an A-label that decodes to nothing valid
  EXPECT_EQ(name_of("XN--BCHER-KVA.Example"), "xn--bcher-kva.example");
}
