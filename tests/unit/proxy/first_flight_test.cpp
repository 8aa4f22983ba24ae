// What a captured or SOCKS5 connection's first bytes are taken for (first_flight.hpp):
// the choice between the inspector, the request loop and a blind relay rests on it, so an
// agent must not be able to dress one protocol as another.
#include "doors/first_flight.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

using enum FirstFlight::Kind;

TEST(FirstFlight, ATlsHandshakeRecordIsTls) {
  EXPECT_EQ(sniff_first_flight(std::string("\x16\x03\x01\x02\x00", 5)), tls);
  EXPECT_EQ(sniff_first_flight(std::string("\x16", 1)), tls) << "its first byte is enough";
}

TEST(FirstFlight, AnHttpRequestLineIsHttpWhateverItsMethod) {
  EXPECT_EQ(sniff_first_flight("GET / HTTP/1.1\r\n"), http);
  EXPECT_EQ(sniff_first_flight("POST /x HTTP/1.0\r\n"), http);
  EXPECT_EQ(sniff_first_flight("VERSION-CONTROL / HTTP/1.1"), http);
}

TEST(FirstFlight, APrefixOfAMethodWaitsForMore) {
  EXPECT_EQ(sniff_first_flight(""), unknown);
  EXPECT_EQ(sniff_first_flight("GE"), unknown);
  EXPECT_EQ(sniff_first_flight("OPTIONS"), unknown);
}

TEST(FirstFlight, OtherProtocolsAreRaw) {
  EXPECT_EQ(sniff_first_flight("SSH-2.0-OpenSSH_9.2\r\n"), raw) << "a dash then a digit is no method";
  EXPECT_EQ(sniff_first_flight("get / HTTP/1.1"), raw) << "methods are upper case";
  EXPECT_EQ(sniff_first_flight(" GET /"), raw);
  EXPECT_EQ(sniff_first_flight(std::string("\x00\x00\x00\x08", 4)), raw);
  EXPECT_EQ(sniff_first_flight("ABCDEFGHIJKLMNOPQRS"), raw) << "no method is longer than 16 letters";
}

// The ClientHello's fields reach the policy's check_server_name as they were read (its
// own cases are in tests/unit/policy/decide_request_test.cpp).
TEST(FirstFlight, FrontingIsDecidedOnTheHelloAsRead) {
  const auto name = *policy::parse_host("allowed.test").host;
  FirstFlight f;
  f.kind = tls;
  f.hello.status = tls::ClientHello::Status::complete;
  f.hello.server_name = "allowed.test";
  EXPECT_FALSE(check_first_flight(f, name, "the name"));
  f.hello.server_name = "front.test";
  auto no = check_first_flight(f, name, "the name");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 403u);
  EXPECT_EQ(no->outcome, Outcome::deny);
  EXPECT_EQ(no->rule, "sni");
  EXPECT_EQ(no->reason, "the TLS ClientHello asks for the server name front.test, not allowed.test, the name (domain "
                        "fronting)");
  f.hello.encrypted_client_hello = true;
  no = check_first_flight(f, name, "the name");
  ASSERT_TRUE(no);
  EXPECT_NE(no->reason.find("an Encrypted Client Hello's outer name must be it too"), std::string::npos);
  f.hello.server_name.clear();
  EXPECT_FALSE(check_first_flight(f, name, "the name")) << "no name: decided on the admitted one";
}

TEST(FirstFlight, TheHostCheckWantsExactlyOneHostHeaderNamingTheAdmittedName) {
  const auto admitted = *policy::parse_host("allowed.test").host;
  EXPECT_FALSE(check_host_headers({"allowed.test"}, admitted));
  EXPECT_FALSE(check_host_headers({" Allowed.TEST.:8080 "}, admitted)) << "case, port and final dot";
  const auto other = check_host_headers({"evil.test"}, admitted);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 403u);
  EXPECT_EQ(other->rule, "host");
  EXPECT_EQ(other->reason.rfind("the Host header names evil.test, not allowed.test", 0), 0u) << other->reason;
  for (const auto& values : {std::vector<std::string_view>{}, std::vector<std::string_view>{"allowed.test", "allowed.test"},
                             std::vector<std::string_view>{"  "}}) {
    const auto no = check_host_headers(values, admitted);
    ASSERT_TRUE(no);
    EXPECT_EQ(no->status, 400u);
  }
}

// Issue 22, item 6: one CRLF before a request made it "another protocol", relayed unread.
TEST(FirstFlight, EmptyLinesBeforeARequestLineAreSkipped) {
  EXPECT_EQ(sniff_first_flight("\r\nGET / HTTP/1.1\r\n"), http);
  EXPECT_EQ(sniff_first_flight("\r\n\r\n\nPOST / HTTP/1.1\r\n"), http);
  EXPECT_EQ(sniff_first_flight("\r\n"), unknown) << "only empty lines so far: wait for more";
}

FirstFlight flight(FirstFlight::Kind kind, std::string bytes) {
  FirstFlight f;
  f.kind = kind;
  f.bytes = std::move(bytes);
  f.head_complete = f.bytes.find("\r\n\r\n") != std::string::npos;
  return f;
}

// The one check every door runs (issue 22, item 6): a hello that cannot be read is
// refused when there is a name to compare, never let through.
TEST(FirstFlight, TheCheckRefusesAnUnreadableHelloAndAnotherHost) {
  const auto name = *policy::parse_host("allowed.test").host;
  auto f = flight(tls, "\x16\x03\x01");
  f.hello.status = tls::ClientHello::Status::malformed;
  f.hello.reason = "bad server_name";
  auto no = check_first_flight(f, name, "the name");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->rule, "sni");
  EXPECT_NE(no->reason.find("cannot be read (bad server_name)"), std::string::npos) << no->reason;
  EXPECT_FALSE(check_first_flight(f, *policy::parse_host("127.0.0.1").host, "the address"))
      << "a literal has no name to compare";
  f.hello.status = tls::ClientHello::Status::complete;
  f.hello.server_name = "allowed.test";
  EXPECT_FALSE(check_first_flight(f, name, "the name"));
  auto other = check_first_flight(flight(http, "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"), name, "the name");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->rule, "host");
  EXPECT_FALSE(check_first_flight(flight(http, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"), name, "n"));
  EXPECT_EQ(check_first_flight(flight(http, "GET / HTTP/1.1\r\nHost: a"), name, "n")->status, 431u);
  EXPECT_FALSE(check_first_flight(flight(raw, "SSH-2.0-x\r\n"), name, "n"));
}

}  // namespace
}  // namespace netbox::proxy
