// Heads written as flat text: what the upstream and the agent receive, byte for byte.
#include "http/head_writer.hpp"

#include <boost/beast/http/message.hpp>

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

namespace http = boost::beast::http;

TEST(HeadWriter, AForwardedRequestHasOriginFormTheDecidedHostAndNoHopOrNetboxFields) {
  http::request_header<> req;
  req.method(http::verb::get);
  req.target("http://Example.COM/a?b");
  req.version(11);
  req.set(http::field::host, "evil.example");
  req.set(http::field::accept, "*/*");
  req.set(http::field::connection, "keep-alive");
  req.set(http::field::proxy_authorization, "Basic abc");
  req.set("X-Netbox-Agent", "someone-else");
  req.set(http::field::expect, "100-continue");
  std::string out = "left from before: the caller clears";
  out.clear();
  append_forwarded_request(out, req, "/a?b", "example.com", {});
  EXPECT_EQ(out, "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
}

TEST(HeadWriter, RequestFramingIsTheProxysOwn) {
  http::request_header<> req;
  req.method(http::verb::post);
  req.version(10);
  req.set(http::field::content_length, "999");
  std::string out;
  append_forwarded_request(out, req, "/up", "example.com:8080", {BodyFraming::Kind::length, 12});
  EXPECT_EQ(out, "POST /up HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 12\r\n\r\n");
  out.clear();
  append_forwarded_request(out, req, "/up", "example.com", {BodyFraming::Kind::chunked, 0});
  EXPECT_EQ(out, "POST /up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n");
  out.clear();
  // A POST without a body still says so, as prepare_payload would.
  append_forwarded_request(out, req, "/up", "example.com", {});
  EXPECT_EQ(out, "POST /up HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n");
}

TEST(HeadWriter, AResponseHeadIsWrittenAsItStands) {
  http::response_header<> res;
  res.result(http::status::not_found);
  res.version(11);
  res.set(http::field::content_length, "0");
  std::string out;
  append_response_head(out, res);
  EXPECT_EQ(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
}

TEST(HeadWriter, ChunkSizesAreHex) {
  std::string out;
  append_chunk_size(out, 0x1a2b);
  EXPECT_EQ(out, "1a2b\r\n");
}

}  // namespace
}  // namespace netbox::proxy
