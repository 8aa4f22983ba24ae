// The SOCKS5 handshake read byte by byte: what an agent's client sends, what netbox reads
// from it, and which reply code refuses what it cannot do.
#include "doors/socks_request.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace netbox::proxy::socks {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes connect_domain(std::string_view name, std::uint16_t port, std::uint8_t cmd = 1) {
  Bytes b{5, cmd, 0, 3, static_cast<std::uint8_t>(name.size())};
  for (char c : name) b.push_back(static_cast<std::uint8_t>(c));
  b.push_back(static_cast<std::uint8_t>(port >> 8));
  b.push_back(static_cast<std::uint8_t>(port & 0xff));
  return b;
}

TEST(SocksGreeting, NoAuthIsChosenWhenOffered) {
  const Bytes in{5, 2, 0x02, 0x00};
  const auto g = read_greeting(in);
  EXPECT_EQ(g.status, Status::complete);
  EXPECT_EQ(g.used, 4u);
  EXPECT_EQ(g.method, Method::no_auth);
}

TEST(SocksGreeting, UsernamePasswordIsChosenWhenItIsAllThatIsOffered) {
  const Bytes in{5, 1, 0x02};
  const auto g = read_greeting(in);
  EXPECT_EQ(g.status, Status::complete);
  EXPECT_EQ(g.method, Method::password);
}

TEST(SocksGreeting, OnlyUnsupportedMethodsAreAnsweredNoAcceptableMethod) {
  const Bytes in{5, 2, 0x01, 0x80};  // GSSAPI and a private method
  const auto g = read_greeting(in);
  EXPECT_EQ(g.status, Status::refused);
  EXPECT_FALSE(g.silent) << "the client is told 0xFF";
  EXPECT_EQ(g.method, Method::none_acceptable);
  EXPECT_EQ(method_selection(g.method), (std::array<std::uint8_t, 2>{5, 0xff}));
}

TEST(SocksGreeting, NoMethodsAtAllIsRefused) {
  const auto g = read_greeting(Bytes{5, 0});
  EXPECT_EQ(g.status, Status::refused);
  EXPECT_FALSE(g.problem.empty());
}

TEST(SocksGreeting, OtherVersionsAreClosedWithoutAnAnswer) {
  for (std::uint8_t v : {std::uint8_t{4}, std::uint8_t{'G'}, std::uint8_t{0x16}}) {  // SOCKS4, an HTTP request, a TLS hello
    const auto g = read_greeting(Bytes{v, 1, 0});
    EXPECT_EQ(g.status, Status::refused) << int(v);
    EXPECT_TRUE(g.silent) << int(v);
  }
}

TEST(SocksGreeting, EveryTruncationNeedsMore) {
  const Bytes in{5, 3, 0x00, 0x01, 0x02};
  for (std::size_t n = 0; n < in.size(); ++n)
    EXPECT_EQ(read_greeting(std::span(in).first(n)).status, Status::need_more) << n;
}

TEST(SocksCredentials, UsernameIsReadAndThePasswordIsNot) {
  const Bytes in{1, 5, 'a', 'g', 'e', 'n', 't', 3, 't', 'o', 'k', 'X'};
  const auto c = read_credentials(in);
  EXPECT_EQ(c.status, Status::complete);
  EXPECT_EQ(c.used, 11u) << "the byte after the password is the request's";
  EXPECT_EQ(c.username, "agent");
}

TEST(SocksCredentials, EmptyUsernameAndPasswordAreAccepted) {
  const auto c = read_credentials(Bytes{1, 0, 0});
  EXPECT_EQ(c.status, Status::complete);
  EXPECT_EQ(c.used, 3u);
}

TEST(SocksCredentials, WrongSubnegotiationVersionIsRefused) {
  const auto c = read_credentials(Bytes{5, 0, 0});
  EXPECT_EQ(c.status, Status::refused);
  EXPECT_EQ(credentials_status(false), (std::array<std::uint8_t, 2>{1, 1}));
}

TEST(SocksCredentials, EveryTruncationNeedsMore) {
  const Bytes in{1, 2, 'a', 'b', 2, 'c', 'd'};
  for (std::size_t n = 0; n < in.size(); ++n)
    EXPECT_EQ(read_credentials(std::span(in).first(n)).status, Status::need_more) << n;
}

TEST(SocksRequest, ConnectToADomainName) {
  const auto r = read_request(connect_domain("example.com", 443));
  EXPECT_EQ(r.status, Status::complete);
  EXPECT_EQ(r.used, 5u + 11 + 2);
  EXPECT_EQ(r.type, AddressType::domain);
  EXPECT_EQ(r.host, "example.com") << "as sent: the policy normalises it";
  EXPECT_EQ(r.port, 443);
  EXPECT_EQ(r.command, 1);
}

TEST(SocksRequest, ConnectToAnIpv4Address) {
  const auto r = read_request(Bytes{5, 1, 0, 1, 169, 254, 169, 254, 0, 80});
  EXPECT_EQ(r.status, Status::complete);
  EXPECT_EQ(r.used, 10u);
  EXPECT_EQ(r.type, AddressType::ipv4);
  EXPECT_EQ(r.host, "169.254.169.254");
  EXPECT_EQ(r.port, 80);
}

TEST(SocksRequest, ConnectToAnIpv6Address) {
  Bytes in{5, 1, 0, 4};
  const std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (auto c : v6) in.push_back(c);
  in.push_back(0x1f);
  in.push_back(0x90);
  const auto r = read_request(in);
  EXPECT_EQ(r.status, Status::complete);
  EXPECT_EQ(r.used, 22u);
  EXPECT_EQ(r.type, AddressType::ipv6);
  EXPECT_EQ(r.host, "2001:db8::1");
  EXPECT_EQ(r.port, 8080);
}

TEST(SocksRequest, BytesAfterTheRequestAreNotPartOfIt) {
  auto in = connect_domain("a.test", 80);
  const auto len = in.size();
  for (char c : {'G', 'E', 'T'}) in.push_back(static_cast<std::uint8_t>(c));
  const auto r = read_request(in);
  EXPECT_EQ(r.status, Status::complete);
  EXPECT_EQ(r.used, len);
}

TEST(SocksRequest, BindAndUdpAssociateAreCommandNotSupported) {
  for (std::uint8_t cmd : {2, 3, 9}) {
    const auto r = read_request(connect_domain("a.test", 80, cmd));
    EXPECT_EQ(r.status, Status::refused) << int(cmd);
    EXPECT_EQ(r.reply, Reply::command_not_supported) << int(cmd);
    EXPECT_EQ(r.host, "a.test") << "read whole, so the row can name the destination";
    EXPECT_EQ(r.port, 80);
  }
  EXPECT_EQ(command_name(2), "BIND");
  EXPECT_EQ(command_name(3), "UDP ASSOCIATE");
  EXPECT_EQ(command_name(9), "command 9");
}

TEST(SocksRequest, UnknownAddressTypeIsAddressTypeNotSupported) {
  const auto r = read_request(Bytes{5, 1, 0, 2, 1, 2, 3, 4});
  EXPECT_EQ(r.status, Status::refused);
  EXPECT_EQ(r.reply, Reply::address_type_not_supported);
}

TEST(SocksRequest, MalformedRequestsAreGeneralFailure) {
  EXPECT_EQ(read_request(Bytes{4, 1, 0, 1}).reply, Reply::general_failure) << "version";
  EXPECT_EQ(read_request(Bytes{5, 1, 7, 1}).reply, Reply::general_failure) << "reserved byte";
  EXPECT_EQ(read_request(Bytes{5, 1, 0, 3, 0, 0, 80}).reply, Reply::general_failure) << "empty name";
  for (const auto& in : {Bytes{4, 1, 0, 1}, Bytes{5, 1, 7, 1}, Bytes{5, 1, 0, 3, 0}})
    EXPECT_EQ(read_request(in).status, Status::refused);
}

TEST(SocksRequest, EveryTruncationNeedsMore) {
  Bytes v6{5, 1, 0, 4};
  v6.resize(4 + 16 + 2, 1);
  for (const auto& in : {connect_domain("example.com", 443), Bytes{5, 1, 0, 1, 127, 0, 0, 1, 0, 80}, v6})
    for (std::size_t n = 0; n < in.size(); ++n)
      EXPECT_EQ(read_request(std::span(in).first(n)).status, Status::need_more) << n;
}

TEST(SocksReply, RepliesCarryTheCodeAndAnEmptyBoundAddress) {
  EXPECT_EQ(reply(Reply::not_allowed), (std::array<std::uint8_t, 10>{5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(reply(Reply::succeeded)[1], 0);
  EXPECT_EQ(static_cast<int>(Reply::host_unreachable), 4);
  EXPECT_EQ(static_cast<int>(Reply::connection_refused), 5);
  EXPECT_EQ(static_cast<int>(Reply::ttl_expired), 6);
  EXPECT_EQ(static_cast<int>(Reply::command_not_supported), 7);
  EXPECT_EQ(static_cast<int>(Reply::address_type_not_supported), 8);
}

}  // namespace
}  // namespace netbox::proxy::socks
