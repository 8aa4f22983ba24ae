// Header hygiene: what is never passed on between the agent and an upstream.
#include "http/headers.hpp"

#include <boost/beast/http/fields.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace netbox::proxy {
namespace {

namespace http = boost::beast::http;

// The names of the fields of `f` that `keep` keeps.
template <typename Keep>
std::set<std::string> names(const http::fields& f, Keep keep) {
  std::set<std::string> out;
  for (const auto& field : f)
    if (keep(field)) out.insert(std::string(field.name_string()));
  return out;
}

std::set<std::string> names(const http::fields& f) {
  return names(f, [](const auto&) { return true; });
}

http::fields fields(std::initializer_list<std::pair<const char*, const char*>> list) {
  http::fields f;
  for (const auto& field : list) f.insert(field.first, field.second);
  return f;
}

TEST(Headers, HopByHopFieldsAndThoseConnectionListsAreStripped) {
  auto f = fields({{"Connection", "keep-alive, X-Secret-Hop"},
                   {"Keep-Alive", "timeout=5"},
                   {"Proxy-Authorization", "Basic abc"},
                   {"Proxy-Whatever", "1"},
                   {"TE", "trailers"},
                   {"Upgrade", "websocket"},
                   {"x-secret-hop", "listed by Connection, in another case"},
                   {"Accept", "*/*"},
                   {"Transfer-Encoding", "chunked"}});
  strip_hop_by_hop(f);
  EXPECT_EQ(names(f), (std::set<std::string>{"Accept"}));
}

TEST(Headers, NetboxFieldsAreRecognisedInAnyCase) {
  auto f = fields({{"X-Netbox-Decision", "allow"},
                   {"x-NETBOX-reason", "forged"},
                   {"X-Netboxish", "not ours"}});
  EXPECT_EQ(names(f, is_netbox_field), (std::set<std::string>{"X-Netbox-Decision", "x-NETBOX-reason"}));
}

TEST(Headers, AResponseForTheAgentLosesForgedDecisionsAndGetsOneContentLength) {
  auto f = fields({{"X-Netbox-Decision", "deny"},
                   {"Content-Length", "5, 5"},
                   {"Connection", "close"},
                   {"Content-Type", "text/plain"}});
  strip_response_fields(f, 5);
  EXPECT_EQ(names(f), (std::set<std::string>{"Content-Length", "Content-Type"}));
  EXPECT_EQ(f[http::field::content_length], "5");
  EXPECT_EQ(f.count(http::field::content_length), 1U);
}

TEST(Headers, RemainingCodingsDropOnlyTheFinalChunked) {
  auto f = fields({{"Transfer-Encoding", "gzip, chunked"}});
  EXPECT_EQ(remaining_transfer_codings(f, true), "gzip");
  auto plain = fields({{"Transfer-Encoding", "chunked"}});
  EXPECT_EQ(remaining_transfer_codings(plain, true), "");
  EXPECT_EQ(remaining_transfer_codings(http::fields{}, false), "");
}

}  // namespace
}  // namespace netbox::proxy
