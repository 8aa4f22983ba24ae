// Header hygiene: what is never passed on between the agent and an upstream.
#include "headers.hpp"

#include <boost/beast/http/fields.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace netbox::proxy {
namespace {

namespace http = boost::beast::http;

std::set<std::string> names(const http::fields& f) {
  std::set<std::string> out;
  for (const auto& field : f) out.insert(std::string(field.name_string()));
  return out;
}

TEST(Headers, HopByHopFieldsAndThoseConnectionListsAreStripped) {
  http::fields f;
  f.insert("Connection", "keep-alive, X-Secret-Hop");
  f.insert("Keep-Alive", "timeout=5");
  f.insert("Proxy-Authorization", "Basic abc");
  f.insert("Proxy-Whatever", "1");
  f.insert("TE", "trailers");
  f.insert("Upgrade", "websocket");
  f.insert("x-secret-hop", "listed by Connection, in another case");
  f.insert("Accept", "*/*");
  f.insert("Transfer-Encoding", "chunked");
  strip_hop_by_hop(f);
  EXPECT_EQ(names(f), (std::set<std::string>{"Accept"}));
}

TEST(Headers, NetboxFieldsAreRecognisedInAnyCase) {
  http::fields f;
  f.insert("X-Netbox-Decision", "allow");
  f.insert("x-NETBOX-reason", "forged");
  f.insert("X-Netboxish", "not ours");
  std::set<std::string> ours;
  for (const auto& field : f)
    if (is_netbox_field(field)) ours.insert(std::string(field.name_string()));
  EXPECT_EQ(ours, (std::set<std::string>{"X-Netbox-Decision", "x-NETBOX-reason"}));
}

TEST(Headers, AResponseForTheAgentLosesForgedDecisionsAndGetsOneContentLength) {
  http::fields f;
  f.insert("X-Netbox-Decision", "deny");
  f.insert("Content-Length", "5, 5");
  f.insert("Connection", "close");
  f.insert("Content-Type", "text/plain");
  strip_response_fields(f, 5);
  EXPECT_EQ(names(f), (std::set<std::string>{"Content-Length", "Content-Type"}));
  EXPECT_EQ(f[http::field::content_length], "5");
  EXPECT_EQ(f.count(http::field::content_length), 1U);
}

TEST(Headers, RemainingCodingsDropOnlyTheFinalChunked) {
  http::fields f;
  f.insert("Transfer-Encoding", "gzip, chunked");
  EXPECT_EQ(remaining_transfer_codings(f, true), "gzip");
  http::fields plain;
  plain.insert("Transfer-Encoding", "chunked");
  EXPECT_EQ(remaining_transfer_codings(plain, true), "");
  EXPECT_EQ(remaining_transfer_codings(http::fields{}, false), "");
}

}  // namespace
}  // namespace netbox::proxy
