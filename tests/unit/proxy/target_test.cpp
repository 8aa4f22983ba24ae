// Reading the destination from a request target: the only truth about where a request goes.
#include "pipeline/target.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

TEST(Target, AbsoluteFormGivesHostPortPathAndQuery) {
  const auto t = parse_absolute_target("http://Example.com:8080/a/b?x=1#frag");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.host, "Example.com") << "as written: the policy normalises it";
  EXPECT_EQ(t.port, 8080);
  EXPECT_EQ(t.path_and_query, "/a/b?x=1") << "the fragment never goes upstream";
  EXPECT_EQ(t.path, "/a/b") << "the audit row has no query string";
}

TEST(Target, DefaultsArePort80AndPathSlash) {
  const auto t = parse_absolute_target("HTTP://example.com?q");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.port, 80);
  EXPECT_EQ(t.path_and_query, "/?q");
  EXPECT_EQ(t.path, "/");
}

TEST(Target, BracketedIpv6LiteralsLoseTheirBrackets) {
  auto t = parse_absolute_target("http://[2001:db8::1]:81/");
  EXPECT_EQ(t.host, "2001:db8::1");
  EXPECT_EQ(t.port, 81);
  t = parse_connect_target("[::1]:443");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.host, "::1");
  EXPECT_EQ(authority(t.host, t.port), "[::1]:443");
  EXPECT_EQ(authority("example.com", 80), "example.com:80");
}

TEST(Target, UserinfoIsRefusedAndTheRealHostIsRecorded) {
  const auto t = parse_absolute_target("http://allowed.test@127.0.0.1/");
  EXPECT_NE(t.error.find("userinfo"), std::string::npos) << t.error;
  EXPECT_EQ(t.host, "127.0.0.1") << "the row names where the request would have gone";
}

TEST(Target, TargetsThatAreNotAbsoluteHttpAreRefusedWithWhatToDo) {
  struct Case {
    const char* target;
    const char* fragment;
  };
  for (const auto& c : {Case{"/index.html", "origin-form"}, Case{"https://example.com/", "CONNECT"},
                        Case{"ftp://example.com/", "absolute http://"}, Case{"http:///x", "no host"},
                        Case{"http://[example.com]/", "brackets"}, Case{"http://[fe80::1%25eth0]/", "zone"},
                        Case{"http://2001:db8::1/", "in brackets"}, Case{"http://example.com:0/", "between 1 and"},
                        Case{"http://example.com:99999/", "between 1 and"},
                        Case{"http://example.com:8o/", "not a number"}}) {
    const auto t = parse_absolute_target(c.target);
    EXPECT_NE(t.error.find(c.fragment), std::string::npos) << c.target << ": " << t.error;
  }
}

TEST(Target, ConnectNeedsHostAndPort) {
  for (const char* bad : {"example.com", "example.com:", ":443", "example.com:https"}) {
    const auto t = parse_connect_target(bad);
    EXPECT_FALSE(t.error.empty()) << bad;
  }
  const auto t = parse_connect_target("example.com:443");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.host, "example.com");
  EXPECT_EQ(t.port, 443);
}

}  // namespace
}  // namespace netbox::proxy
