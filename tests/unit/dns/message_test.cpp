#include "netbox/dns/message.hpp"

#include <gmock/gmock.h>

#include <string>
#include <vector>

namespace netbox::dns {
namespace {

using Bytes = std::vector<std::uint8_t>;
using boost::asio::ip::make_address;

void put16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}

// A query as glibc's resolver sends it (id, RD, one question; optionally EDNS).
Bytes query(const std::string& name, std::uint16_t type = 1, bool edns = false, std::uint16_t flags = 0x0100) {
  Bytes b;
  put16(b, 0xbeef);
  put16(b, flags);
  put16(b, 1);
  put16(b, 0);
  put16(b, 0);
  put16(b, edns ? 1 : 0);
  std::size_t start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i)
    if (i == name.size() || name[i] == '.') {
      if (i > start) {
        b.push_back(static_cast<std::uint8_t>(i - start));
        b.insert(b.end(), name.begin() + static_cast<long>(start), name.begin() + static_cast<long>(i));
      }
      start = i + 1;
    }
  b.push_back(0);
  put16(b, type);
  put16(b, 1);
  if (edns) {
    b.push_back(0);
    put16(b, 41);
    put16(b, 4096);
    b.insert(b.end(), {0, 0, 0, 0});
    put16(b, 0);
  }
  return b;
}

TEST(DnsMessage, AQueryIsReadWithItsNameLowerCased) {
  Bytes q = query("API.Example.test", 28, true);
  ReadResult r = read_query(q);
  ASSERT_EQ(r.kind, ReadResult::Kind::query) << r.problem;
  EXPECT_EQ(r.query.id, 0xbeef);
  EXPECT_TRUE(r.query.recursion_desired);
  EXPECT_EQ(r.query.name, "api.example.test");
  EXPECT_EQ(r.query.qtype, 28);
  EXPECT_TRUE(r.query.edns);
  EXPECT_EQ(r.query.udp_size, 1232) << "what the client offers, capped at what we send";
}

TEST(DnsMessage, AnAnswerCarriesTheQuestionAndTheAddresses) {
  Bytes q = query("a.test", 1);
  ReadResult r = read_query(q);
  ASSERT_EQ(r.kind, ReadResult::Kind::query);
  Bytes a = answer(r.query, {make_address("198.18.0.7")}, 60);
  ASSERT_GE(a.size(), q.size() + 16);
  EXPECT_EQ(a[0], 0xbe);
  EXPECT_EQ(a[1], 0xef);
  EXPECT_EQ(a[2] & 0x80, 0x80) << "QR";
  EXPECT_EQ(a[2] & 0x01, 0x01) << "RD echoed";
  EXPECT_EQ(a[3] & 0x0f, 0) << "NOERROR";
  EXPECT_EQ(a[7], 1) << "one answer";
  EXPECT_TRUE(std::equal(q.begin() + 12, q.end(), a.begin() + 12)) << "the question is echoed";
  EXPECT_EQ(Bytes(a.end() - 4, a.end()), (Bytes{198, 18, 0, 7}));
  // The TTL (60) sits before the rdlength.
  EXPECT_EQ(Bytes(a.end() - 10, a.end() - 6), (Bytes{0, 0, 0, 60}));

  Bytes six = answer(read_query(query("a.test", 28)).query, {make_address("fd00:6e62::7")}, 60);
  EXPECT_EQ(six[six.size() - 1], 7);
  EXPECT_EQ(six[six.size() - 17], 16) << "rdlength 16";
}

TEST(DnsMessage, RefusalsKeepTheIdAndTheQuestion) {
  const Bytes q = query("denied.test");  // the query's question is a view of these bytes
  ReadResult r = read_query(q);
  Bytes nx = empty_answer(r.query, Rcode::nxdomain);
  EXPECT_EQ(nx[3] & 0x0f, 3);
  EXPECT_EQ(nx[5], 1) << "the question is echoed";
  EXPECT_EQ(nx[7], 0) << "no answer";
}

TEST(DnsMessage, MalformedQueriesAreAnsweredFormerrAndResponsesNeverAnswered) {
  // Responses and runts: nothing is sent back (no reflection, nothing to address).
  EXPECT_EQ(read_query(query("a.test", 1, false, 0x8180)).kind, ReadResult::Kind::drop);
  EXPECT_EQ(read_query(Bytes{1, 2, 3}).kind, ReadResult::Kind::drop);
  auto formerr = [](const Bytes& b) {
    ReadResult r = read_query(b);
    EXPECT_EQ(r.kind, ReadResult::Kind::answer_error);
    EXPECT_EQ(r.rcode, Rcode::formerr);
    EXPECT_EQ(r.query.id, 0xbeef);
    return r.problem;
  };
  EXPECT_THAT(formerr(query(std::string(64, 'a') + ".test")), ::testing::HasSubstr("longer than 63"));
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'a') + ".";
  EXPECT_THAT(formerr(query(long_name + "test")), ::testing::HasSubstr("longer than 253"));
  Bytes pointer = query("a.test");
  pointer[12] = 0xc0;
  EXPECT_THAT(formerr(pointer), ::testing::HasSubstr("compression pointer"));
  Bytes nul = query("a.test");
  nul[13] = 0;
  EXPECT_THAT(formerr(nul), ::testing::HasSubstr("no host name holds"));
  Bytes dot = query("ab.test");
  dot[13] = '.';  // "a.b" as one label would read as two
  EXPECT_THAT(formerr(dot), ::testing::HasSubstr("no host name holds"));
  Bytes two = query("a.test");
  two[5] = 2;
  EXPECT_THAT(formerr(two), ::testing::HasSubstr("exactly one question"));
  Bytes extra = query("a.test");
  extra.push_back(0);
  EXPECT_THAT(formerr(extra), ::testing::HasSubstr("bytes after"));
  Bytes cut = query("a.test");
  cut.resize(cut.size() - 3);
  EXPECT_THAT(formerr(cut), ::testing::HasSubstr("ends early"));
}

TEST(DnsMessage, OtherOpcodesAndClassesAreNotImplemented) {
  ReadResult update = read_query(query("a.test", 1, false, 0x2800));  // opcode 5, UPDATE
  EXPECT_EQ(update.kind, ReadResult::Kind::answer_error);
  EXPECT_EQ(update.rcode, Rcode::notimp);
  Bytes chaos = query("version.bind", 16);
  chaos[chaos.size() - 1] = 3;  // class CH
  EXPECT_EQ(read_query(chaos).rcode, Rcode::notimp);
}

TEST(DnsMessage, AnAnswerTooLargeForUdpIsTruncatedAndSaysSo) {
  const Bytes q = query("many.test");
  ReadResult r = read_query(q);
  std::vector<boost::asio::ip::address> lots;
  for (int i = 0; i < 100; ++i) lots.push_back(boost::asio::ip::make_address_v4(0xc6120000u + static_cast<unsigned>(i)));
  Bytes a = answer(r.query, lots, 60);
  EXPECT_LE(a.size(), 512u);
  EXPECT_EQ(a[2] & 0x02, 0x02) << "TC";
  EXPECT_LT(a[7], 100);
}

}  // namespace
}  // namespace netbox::dns
