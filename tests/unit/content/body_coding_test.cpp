// A request body's Content-Encoding taken off for the body checks (issue 28): gzip and
// deflate (zlib or raw) within a bound, everything else refused, never passed unchecked.
#include "netbox/content/body_coding.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

namespace netbox::content {
namespace {

using ::testing::HasSubstr;

// windowBits as zlib takes them: 16+15 gzip, 15 zlib, -15 raw deflate.
std::string compress(const std::string& in, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string decoded(std::string_view coding, const std::string& body, std::size_t limit = 1024) {
  auto r = decode_body(coding, body, limit);
  if (auto* no = std::get_if<CodingRefusal>(&r)) return "refused: " + no->reason;
  return std::get<std::string>(r);
}

TEST(BodyCoding, IdentityGzipAndBothDeflatesAreDecoded) {
  const std::string text = R"({"to": ["ann@example.test"]})";
  EXPECT_EQ(decoded("", text), text);
  EXPECT_EQ(decoded("identity", text), text);
  EXPECT_EQ(decoded("gzip", compress(text, 16 + MAX_WBITS)), text);
  EXPECT_EQ(decoded(" X-GZIP ", compress(text, 16 + MAX_WBITS)), text);
  EXPECT_EQ(decoded("deflate", compress(text, MAX_WBITS)), text);
  EXPECT_EQ(decoded("deflate", compress(text, -MAX_WBITS)), text);
}

TEST(BodyCoding, ABombIsStoppedAtTheLimit) {
  const std::string bomb = compress(std::string(32 << 20, 'a'), 16 + MAX_WBITS);
  ASSERT_LT(bomb.size(), 64u * 1024);
  auto r = decode_body("gzip", bomb, 4096);
  ASSERT_TRUE(std::holds_alternative<CodingRefusal>(r));
  EXPECT_TRUE(std::get<CodingRefusal>(r).too_large);
  EXPECT_THAT(std::get<CodingRefusal>(r).reason, HasSubstr("decodes to more than 4096 bytes"));
  EXPECT_TRUE(std::get<CodingRefusal>(decode_body("", std::string(5000, 'a'), 4096)).too_large);
}

TEST(BodyCoding, WhatCannotBeReadOneWayIsRefused) {
  const std::string gz = compress("{}", 16 + MAX_WBITS);
  EXPECT_THAT(decoded("br", "{}"), HasSubstr("Content-Encoding is \"br\""));
  EXPECT_THAT(decoded("gzip, gzip", compress(gz, 16 + MAX_WBITS)), HasSubstr("refused"));
  EXPECT_THAT(decoded("gzip", gz.substr(0, gz.size() - 3)), HasSubstr("not a complete gzip stream"));
  EXPECT_THAT(decoded("gzip", gz + "trailing"), HasSubstr("bytes after its end"));
  EXPECT_THAT(decoded("gzip", "{}"), HasSubstr("refused"));
  auto cut = decode_body("gzip", gz.substr(0, 5), 4096);
  ASSERT_TRUE(std::holds_alternative<CodingRefusal>(cut));
  EXPECT_FALSE(std::get<CodingRefusal>(cut).too_large);
}

}  // namespace
}  // namespace netbox::content
