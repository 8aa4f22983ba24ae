// Domain fronting through every door of the proxy, as a hostile client (issue 22, item
// 6): one table of first messages naming another host than the one the connection was
// admitted for, each sent through HTTP CONNECT (after the 200, and pipelined with the
// CONNECT) and SOCKS5 (after the reply, and as optimistic data before it). Every one is
// refused with a deny row naming the rule, and the upstream gets no request. One fronting
// hello through every door (the captured and inspected ones included) is a case of the
// door-conformance suite (door_conformance_test.cpp); this file keeps the variants of the
// first message and the ways of sending it, which the check must refuse alike.
#include "proxy_fixture.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::test {
namespace {

namespace ip = boost::asio::ip;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

void put16(std::string& b, std::size_t v) {
  b.push_back(static_cast<char>(v >> 8));
  b.push_back(static_cast<char>(v & 0xff));
}

// A TLS 1.3-shaped ClientHello with one server_name extension per name given, and an
// Encrypted Client Hello extension (0xfe0d, GREASE-like bytes) when `ech`.
std::string client_hello(const std::vector<std::string>& names, bool ech = false) {
  std::string exts;
  if (ech) {
    put16(exts, 0xfe0d);
    put16(exts, 8);
    exts.append(8, '\x5a');
  }
  for (const auto& name : names) {
    put16(exts, 0);  // server_name
    put16(exts, name.size() + 5);
    put16(exts, name.size() + 3);
    exts.push_back(0);
    put16(exts, name.size());
    exts += name;
  }
  std::string body;
  put16(body, 0x0303);
  body.append(32, '\xab');
  body.push_back(0);
  put16(body, 2);
  put16(body, 0x1301);
  body += bytes({1, 0});
  put16(body, exts.size());
  body += exts;
  std::string msg = bytes({1, 0}) ;
  put16(msg, body.size());
  msg += body;
  std::string record = bytes({22, 3, 1});
  put16(record, msg.size());
  return record + msg;
}

struct Flight {
  const char* what;
  std::string bytes;
  const char* rule;
};

std::vector<Flight> fronting_flights() {
  return {
      {"a TLS server name of another host", client_hello({"evil.test"}), "sni"},
      {"a TLS server name of another host with a final dot", client_hello({"evil.test."}), "sni"},
      {"a ClientHello that cannot be read (two server names)", client_hello({"upstream.test", "evil.test"}), "sni"},
      {"a TLS server name of another host beside an Encrypted Client Hello extension",
       client_hello({"evil.test"}, true), "sni"},

      {"plain HTTP with another Host", "GET / HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", "host"},
      {"plain HTTP with another Host after an empty line",
       "\r\nGET / HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", "host"},
  };
}

std::string connect_name(const std::string& name, std::uint16_t port) {
  return bytes({5, 1, 0, 3, static_cast<int>(name.size())}) + name + bytes({port >> 8, port & 0xff});
}

class FrontingDoorsTest : public ProxyTest {
 protected:
  void SetUp() override {
    start_proxy(base_policy());
    socks_port = server->add_listener({ip::make_address("127.0.0.1"), 0}, proxy::ListenerKind::socks).port();
  }
  std::string connect_head() const {
    const auto authority = "upstream.test:" + std::to_string(upstream.port());
    return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  }
  // Each door, given the first flight; true when the proxy then ended the connection.
  bool through_connect(const std::string& flight, bool pipelined) {
    ProxyConnection c(port);
    auto r = c.send(connect_head() + (pipelined ? flight : ""), true);
    EXPECT_EQ(r.status, 200);
    if (!pipelined) c.write(flight);
    return c.closed_within(std::chrono::seconds(20));
  }
  bool through_socks(const std::string& flight, bool optimistic) {
    ProxyConnection c(socks_port);
    c.write(bytes({5, 1, 0}));
    EXPECT_EQ(c.read_exactly(2), bytes({5, 0}));
    c.write(connect_name("upstream.test", upstream.port()) + (optimistic ? flight : ""));
    EXPECT_EQ(c.read_exactly(10)[1], 0) << "the SOCKS request itself is allowed";
    if (!optimistic) c.write(flight);
    return c.closed_within(std::chrono::seconds(20));
  }
  // The last connection's rows: one of them refuses with `rule`; none carried a byte up.
  void expect_refused(const std::string& door, const Flight& f) {
    const auto all = rows();
    ASSERT_FALSE(all.empty()) << door << ": " << f.what;
    bool refused = false;
    for (std::size_t i = seen; i < all.size(); ++i) {
      refused = refused || (all[i].decision == "deny" && all[i].rule == f.rule);
      EXPECT_EQ(all[i].bytes_up, 0) << door << ": " << f.what << " relayed " << all[i].bytes_up << " bytes";
    }
    EXPECT_TRUE(refused) << door << ": " << f.what << " was not refused with rule " << f.rule << "; last row "
                         << all.back().decision << " " << all.back().rule << " " << all.back().reason;
    seen = all.size();
    EXPECT_EQ(upstream.requests(), 0u) << door << ": " << f.what << " reached the upstream";
  }

  unsigned short socks_port = 0;
  std::size_t seen = 0;
};

TEST_F(FrontingDoorsTest, EveryFrontingFirstFlightIsRefusedThroughEveryDoor) {
  for (const auto& f : fronting_flights()) {
    EXPECT_TRUE(through_connect(f.bytes, false)) << f.what;
    expect_refused("CONNECT", f);
    EXPECT_TRUE(through_connect(f.bytes, true)) << f.what;
    expect_refused("CONNECT, pipelined", f);
    EXPECT_TRUE(through_socks(f.bytes, false)) << f.what;
    expect_refused("SOCKS5", f);
    EXPECT_TRUE(through_socks(f.bytes, true)) << f.what;
    expect_refused("SOCKS5, optimistic data", f);
  }
}

// The same doors let the honest first flights through: a Host or server name naming the
// host (a final dot included), so the check refuses fronting, not traffic.
// A server takes an absolute-form target's authority over the Host header: through a
// CONNECT tunnel (whose first request is read, not decided like the captured and SOCKS5
// doors' requests, which refuse any target but a path), "GET http://evil.test/" with the
// admitted Host is fronting too (found by a review of issue 22).
TEST_F(FrontingDoorsTest, AnAbsoluteFormTargetThroughATunnelIsRefused) {
  const Flight f{"plain HTTP in absolute form naming another host, with the admitted Host",
                 "GET http://evil.test/ HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n", "host"};
  for (bool pipelined : {false, true}) {
    EXPECT_TRUE(through_connect(f.bytes, pipelined)) << f.what;
    expect_refused(pipelined ? "CONNECT, pipelined" : "CONNECT", f);
  }
}

// Plain HTTP on a SOCKS5 connection is read request by request: a second request on the
// kept-alive connection naming another host behind the same front is refused as the first
// would be. (A CONNECT tunnel is blind after its first message, as TLS is: docs/security.md.)
TEST_F(FrontingDoorsTest, ASecondRequestOnAKeptAliveSocksConnectionCannotNameAnotherHost) {
  ProxyConnection c(socks_port);
  c.write(bytes({5, 1, 0}));
  ASSERT_EQ(c.read_exactly(2), bytes({5, 0}));
  c.write(connect_name("upstream.test", upstream.port()));
  ASSERT_EQ(c.read_exactly(10)[1], 0);
  EXPECT_EQ(c.send("GET /ok HTTP/1.1\r\nHost: upstream.test\r\n\r\n").status, 200);
  const auto second = c.send("GET /second HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  EXPECT_EQ(second.status, 403) << second.error;
  EXPECT_EQ(upstream.requests(), 1u) << "the second request reached the upstream";
  const auto all = rows();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().decision, "deny");
  EXPECT_EQ(all.back().rule, "host");
  EXPECT_EQ(all.back().path, "/second");
}

TEST_F(FrontingDoorsTest, AFirstFlightNamingTheHostGoesThrough) {
  const std::string get = "GET /ok HTTP/1.1\r\nHost: upstream.test.\r\nConnection: close\r\n\r\n";
  ProxyConnection c(port);
  ASSERT_EQ(c.send(connect_head() + get, true).status, 200);
  EXPECT_EQ(c.read_exactly(12), "HTTP/1.1 200");
  ProxyConnection s(socks_port);
  s.write(bytes({5, 1, 0}));
  ASSERT_EQ(s.read_exactly(2), bytes({5, 0}));
  s.write(connect_name("upstream.test", upstream.port()) + get);
  ASSERT_EQ(s.read_exactly(10)[1], 0);
  EXPECT_EQ(s.read_exactly(12), "HTTP/1.1 200");
  EXPECT_EQ(upstream.requests(), 2u);
  for (const auto& row : rows()) EXPECT_EQ(row.decision, "allow") << row.rule << " " << row.reason;
}

}  // namespace
}  // namespace netbox::test
