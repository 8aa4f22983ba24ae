// RequestHeadCheck: the byte-level check of an agent's request head before Beast parses
// it. Each case is a head a smuggler or a broken client sends, and the answer it gets.
#include "http/request_head.hpp"

#include <gtest/gtest.h>

#include <string>

namespace netbox::proxy {
namespace {

using State = RequestHeadCheck::State;

struct Refused {
  std::string head;
  unsigned status;
  std::string fragment;  // in the reason
};

TEST(RequestHeadCheck, AnOrdinaryHeadIsCompleteUpToItsBlankLine) {
  const std::string head = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
  RequestHeadCheck c;
  ASSERT_EQ(c.scan(head + "body bytes"), State::complete);
  EXPECT_EQ(c.head_size(), head.size());
  EXPECT_EQ(c.method(), "GET");
  EXPECT_EQ(c.target(), "http://example.com/");
}

TEST(RequestHeadCheck, AHeadArrivingInPiecesNeedsMoreUntilItsEnd) {
  const std::string head = "POST http://example.com/up HTTP/1.1\r\nContent-Length: 3\r\n\r\n";
  RequestHeadCheck c;
  for (std::size_t n = 1; n < head.size(); ++n) ASSERT_EQ(c.scan(head.substr(0, n)), State::need_more) << n;
  EXPECT_EQ(c.scan(head), State::complete);
}

TEST(RequestHeadCheck, FramingWithMoreThanOneReadingIsRefused) {
  const std::string line = "POST http://example.com/ HTTP/1.1\r\n";
  for (const auto& r : std::vector<Refused>{
           {line + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", 400, "more than one Content-Length"},
           {line + "Content-Length: 5, 5\r\n\r\n", 400, "not a single decimal number"},
           {line + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400, "both Content-Length and"},
           {line + "Transfer-Encoding:\r\n chunked\r\n\r\n", 400, "folded header line"},
           {line + "Host: a\nX: b\r\n\r\n", 400, "bare LF"},
           {line + "Host: a\rX: b\r\n\r\n", 400, "CR that is not followed by LF"},
           {"POST http://example.com/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"},
       }) {
    RequestHeadCheck c;
    EXPECT_EQ(c.scan(r.head), State::refused) << r.head;
    EXPECT_EQ(c.problem().status, r.status) << r.head;
    EXPECT_NE(c.problem().reason.find(r.fragment), std::string::npos) << c.problem().reason;
  }
}

TEST(RequestHeadCheck, SizeLimitsAnswer414And431) {
  RequestHeadCheck target;
  EXPECT_EQ(target.scan("GET http://example.com/" + std::string(kMaxTargetLength, 'a') + " HTTP/1.1\r\n\r\n"),
            State::refused);
  EXPECT_EQ(target.problem().status, 414U);

  std::string many = "GET http://example.com/ HTTP/1.1\r\n";
  for (std::size_t i = 0; i <= kMaxHeaderFields; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  RequestHeadCheck fields;
  EXPECT_EQ(fields.scan(many + "\r\n"), State::refused);
  EXPECT_EQ(fields.problem().status, 431U);

  RequestHeadCheck big;
  EXPECT_EQ(big.scan("GET http://example.com/ HTTP/1.1\r\nX-Big: " + std::string(kHeaderLimit, 'a')), State::refused);
  EXPECT_EQ(big.problem().status, 431U);
}

TEST(RequestHeadCheck, ARefusalStaysWhateverFollows) {
  RequestHeadCheck c;
  const std::string bad = "GET http://example.com/ HTTP/1.1\nHost: a\r\n";
  ASSERT_EQ(c.scan(bad), State::refused);
  EXPECT_EQ(c.scan(bad + "\r\n"), State::refused);
}

}  // namespace
}  // namespace netbox::proxy

namespace netbox::proxy {
namespace {

TEST(RequestHeadCheck, MethodListsReadAsLists) {
  namespace http = boost::beast::http;
  EXPECT_TRUE(verb_in(http::verb::put, {http::verb::get, http::verb::put}));
  EXPECT_FALSE(verb_in(http::verb::post, {http::verb::get, http::verb::put}));
  EXPECT_FALSE(verb_in(http::verb::get, {}));
}

}  // namespace
}  // namespace netbox::proxy
