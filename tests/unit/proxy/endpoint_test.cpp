// parse_endpoint: the one reader of ADDR:PORT (--listen, --admin, --dns-server, the
// control socket's "listen"). What it accepts is bound or dialled as is, so anything
// else is refused with the value and the reason in the message.
#include "netbox/proxy/endpoint.hpp"

#include <gtest/gtest.h>

#include <string>

namespace netbox::proxy {
namespace {

std::string refusal(std::string_view text, PortZero zero = PortZero::allowed) {
  try {
    const auto ep = parse_endpoint(text, zero);
    return "accepted as " + endpoint_text(ep);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

void expect_refused(std::string_view text, const std::string& why, PortZero zero = PortZero::allowed) {
  const auto msg = refusal(text, zero);
  EXPECT_NE(msg.find(why), std::string::npos) << text << " -> " << msg;
  EXPECT_NE(msg.find("expected ADDR:PORT"), std::string::npos) << msg;
}

TEST(ParseEndpoint, Ipv4) {
  const auto ep = parse_endpoint("127.0.0.1:3128");
  EXPECT_EQ(ep.address().to_string(), "127.0.0.1");
  EXPECT_EQ(ep.port(), 3128);
  EXPECT_EQ(endpoint_text(parse_endpoint("10.213.0.1:65535")), "10.213.0.1:65535");
  EXPECT_EQ(parse_endpoint("0.0.0.0:080").port(), 80);
}

TEST(ParseEndpoint, Ipv6InBrackets) {
  const auto ep = parse_endpoint("[::1]:3128");
  EXPECT_TRUE(ep.address().is_v6());
  EXPECT_EQ(ep.address().to_string(), "::1");
  EXPECT_EQ(ep.port(), 3128);
  EXPECT_EQ(endpoint_text(parse_endpoint("[2001:db8::1]:443")), "[2001:db8::1]:443");
  EXPECT_EQ(endpoint_text(parse_endpoint("[::ffff:127.0.0.1]:80")), "[::ffff:127.0.0.1]:80");
}

TEST(ParseEndpoint, Ipv6WithoutBracketsIsRefused) {
  expect_refused("::1:3128", "IPv6 addresses go in brackets");
  expect_refused("2001:db8::1", "IPv6 addresses go in brackets");
}

TEST(ParseEndpoint, Ipv4InBracketsIsRefused) { expect_refused("[127.0.0.1]:80", "brackets hold an IPv6 address"); }

TEST(ParseEndpoint, MissingPortIsRefused) {
  expect_refused("127.0.0.1", "no port");
  expect_refused("127.0.0.1:", "'' is not a port number");
  expect_refused("[::1]", "no port");
  expect_refused("[::1]:", "is not a port number");
}

TEST(ParseEndpoint, PortZeroPicksOneForListenersAndIsRefusedWhereNothingCanBePicked) {
  EXPECT_EQ(parse_endpoint("127.0.0.1:0").port(), 0);
  expect_refused("127.0.0.1:0", "port 0", PortZero::refused);
  EXPECT_EQ(parse_endpoint("127.0.0.1:53", PortZero::refused).port(), 53);
}

TEST(ParseEndpoint, PortsOutOfRangeOrNotDecimalAreRefused) {
  for (const char* bad : {"127.0.0.1:65536", "127.0.0.1:99999", "127.0.0.1:123456", "127.0.0.1:-1", "127.0.0.1:+80",
                          "127.0.0.1:0x50", "127.0.0.1: 80", "127.0.0.1:80 ", "127.0.0.1:18446744073709551697"})
    expect_refused(bad, "is not a port number");
}

TEST(ParseEndpoint, HostNamesAreRefused) {
  expect_refused("localhost:80", "'localhost' is not an IP address");
  expect_refused("proxy.example:3128", "'proxy.example' is not an IP address");
  expect_refused("[localhost]:80", "'localhost' is not an IP address");
}

TEST(ParseEndpoint, GarbageIsRefusedNamingTheValue) {
  expect_refused("", "no port");
  expect_refused(":", "no address");
  expect_refused(":80", "no address");
  expect_refused("[]:80", "no address");
  expect_refused("[::1:80", "no ']'");
  expect_refused("[::1]x:80", "between ']' and the port");
  expect_refused("127.1:80", "'127.1' is not an IP address");
  expect_refused("256.0.0.1:80", "is not an IP address");
  expect_refused(" 127.0.0.1:80", "is not an IP address");
  expect_refused("127.0.0.1:80:80", "IPv6 addresses go in brackets");
  EXPECT_NE(refusal("nonsense").find("'nonsense'"), std::string::npos) << refusal("nonsense");
}

TEST(ParseEndpoint, ControlBytesAndNulAreRefusedAndNeverEchoedRaw) {
  const std::string with_nul("127.0.0.1\0junk:80", 17);
  expect_refused(with_nul, "NUL");
  const auto msg = refusal("\x1b[2J:80");
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << "an escape sequence reached the message raw";
  EXPECT_NE(msg.find("\\x1b"), std::string::npos) << msg;
}

// The hand-written IPv4 spelling is the library's, for every octet value in every place
// (a row's resolved_addr is compared with what older rows and other tools wrote).
TEST(AddressText, SpellsEveryAddressAsToStringDoes) {
  for (unsigned v = 0; v < 256; ++v)
    for (unsigned place = 0; place < 4; ++place) {
      boost::asio::ip::address_v4::bytes_type b{1, 20, 200, 3};
      b[place] = static_cast<unsigned char>(v);
      const boost::asio::ip::address a = boost::asio::ip::address_v4(b);
      ASSERT_EQ(address_text(a), a.to_string());
    }
  for (const char* text : {"::1", "fd00:6e62:7800::2", "::ffff:127.0.0.1", "2001:db8::ff00:42:8329"}) {
    const auto a = boost::asio::ip::make_address(text);
    EXPECT_EQ(address_text(a), a.to_string()) << text;
  }
  EXPECT_EQ(endpoint_text({boost::asio::ip::make_address("10.0.0.255"), 3128}), "10.0.0.255:3128");
}

}  // namespace
}  // namespace netbox::proxy
