#include "netbox/policy/request_path.hpp"

#include <gmock/gmock.h>

#include <cstring>
#include <random>
#include <string>

namespace netbox::policy {
namespace {

using ::testing::HasSubstr;

std::string canonical(std::string_view target) {
  RequestPath r = normalize_request_path(target);
  EXPECT_TRUE(r.ok()) << target << ": " << r.refusal;
  return r.path;
}

std::string refusal(std::string_view target) {
  RequestPath r = normalize_request_path(target);
  EXPECT_FALSE(r.ok()) << target << " was accepted as " << r.path;
  EXPECT_TRUE(r.path.empty());
  return r.refusal;
}

TEST(RequestPath, OrdinaryPathsStayAsTheyAre) {
  EXPECT_EQ(canonical("/"), "/");
  EXPECT_EQ(canonical("/repos/acme/widget/pulls"), "/repos/acme/widget/pulls");
  EXPECT_EQ(canonical("/a/b/"), "/a/b/");
  EXPECT_EQ(canonical("/v1/chat:completions"), "/v1/chat:completions");
  EXPECT_EQ(canonical("/files/na%20me"), "/files/na%20me");
  RequestPath q = normalize_request_path("/search?q=a/../b&x=%2F");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.path, "/search");
  EXPECT_TRUE(q.has_query);
  EXPECT_EQ(q.query, "q=a/../b&x=%2F") << "the query is kept as sent";
}

TEST(RequestPath, UnreservedEscapesAreDecodedOthersGetUpperCaseHex) {
  EXPECT_EQ(canonical("/%72epos/%61cme"), "/repos/acme");
  EXPECT_EQ(canonical("/a%7Eb%2d"), "/a~b-");
  EXPECT_EQ(canonical("/caf%c3%a9"), "/caf%C3%A9");
  EXPECT_EQ(canonical("/a%3bb"), "/a%3Bb") << "an escaped ';' stays escaped: it is reserved";
}

TEST(RequestPath, DotSegmentsResolveAndEmptySegmentsFold) {
  EXPECT_EQ(canonical("/repos/acme/../evil/x"), "/repos/evil/x");
  EXPECT_EQ(canonical("/repos/./acme"), "/repos/acme");
  EXPECT_EQ(canonical("/repos//acme///x"), "/repos/acme/x");
  EXPECT_EQ(canonical("//repos/acme"), "/repos/acme");
  EXPECT_EQ(canonical("/a/b/.."), "/a/");
  EXPECT_EQ(canonical("/a/."), "/a/");
  EXPECT_EQ(canonical("/a/.."), "/");
  EXPECT_EQ(canonical("/a/...b/..c"), "/a/...b/..c") << "only whole '.' and '..' segments are dot segments";
}

TEST(RequestPath, SpellingsServersReadDifferentlyAreRefused) {
  EXPECT_THAT(refusal("/repos/acme/%2e%2e/evil"), HasSubstr("dot segment spelled with escapes"));
  EXPECT_THAT(refusal("/repos/acme/.%2E/evil"), HasSubstr("dot segment spelled with escapes"));
  EXPECT_THAT(refusal("/repos/acme/%2e/x"), HasSubstr("dot segment spelled with escapes"));
  EXPECT_THAT(refusal("/repos/acme%2f..%2fevil"), HasSubstr("encoded slash"));
  EXPECT_THAT(refusal("/repos/acme%2F"), HasSubstr("encoded slash"));
  EXPECT_THAT(refusal("/repos/acme/..%5cevil"), HasSubstr("encoded slash or backslash"));
  EXPECT_THAT(refusal("/repos/acme\\..\\evil"), HasSubstr("backslash"));
  EXPECT_THAT(refusal("/public/..;/admin"), HasSubstr("dot segment with parameters"));
  EXPECT_THAT(refusal("/public/.;x/admin"), HasSubstr("dot segment with parameters"));
  EXPECT_THAT(refusal("/a%00.json"), HasSubstr("encoded NUL"));
  EXPECT_THAT(refusal("/.."), HasSubstr("above the root"));
  EXPECT_THAT(refusal("/a/../../etc"), HasSubstr("above the root"));
}

TEST(RequestPath, MalformedTargetsAreRefusedByName) {
  EXPECT_THAT(refusal("repos/acme"), HasSubstr("does not start with '/'"));
  EXPECT_THAT(refusal(""), HasSubstr("does not start with '/'"));
  EXPECT_THAT(refusal("/a#frag"), HasSubstr("fragment"));
  EXPECT_THAT(refusal("/a%"), HasSubstr("two hex digits"));
  EXPECT_THAT(refusal("/a%4"), HasSubstr("two hex digits"));
  EXPECT_THAT(refusal("/a%zz"), HasSubstr("two hex digits"));
  const std::vector<std::string> bad_bytes = {"/a b", "/a\tb", "/caf\xc3\xa9", "/a\"b", "/a<b", "/a|b", "/a{b}",
                                              std::string("/a\0b", 4)};
  for (const std::string& bad : bad_bytes)
    EXPECT_THAT(refusal(bad), HasSubstr("not allowed in a path")) << bad;
}

TEST(RequestPath, CanonicalIsAFixedPoint) {
  for (const char* t : {"/a/./b/../c//d/", "/%41%7e/x%c3%a9", "/x/y/..", "/"}) {
    const std::string once = canonical(t);
    EXPECT_EQ(canonical(once), once) << t;
  }
}

TEST(RequestPath, ATrailingStarCoversTheSubtreeAStarInsideOneSegment) {
  EXPECT_TRUE(path_matches("/repos/acme/*", "/repos/acme/widget"));
  EXPECT_TRUE(path_matches("/repos/acme/*", "/repos/acme/widget/pulls/1"));
  EXPECT_TRUE(path_matches("/repos/acme/*", "/repos/acme/"));
  EXPECT_FALSE(path_matches("/repos/acme/*", "/repos/acme"));
  EXPECT_FALSE(path_matches("/repos/acme/*", "/repos/acmeevil/x"));
  EXPECT_FALSE(path_matches("/repos/acme/*", "/repos/evil"));
  EXPECT_TRUE(path_matches("/repos/*/pulls", "/repos/acme/pulls"));
  EXPECT_FALSE(path_matches("/repos/*/pulls", "/repos/acme/x/pulls"));
  EXPECT_TRUE(path_matches("/v1/*.json", "/v1/models.json"));
  EXPECT_FALSE(path_matches("/v1/*.json", "/v1/a/b.json"));
  EXPECT_TRUE(path_matches("/exact", "/exact"));
  EXPECT_FALSE(path_matches("/exact", "/exact/"));
  EXPECT_TRUE(path_matches("/*", "/anything/at/all"));
}

// The meaning written the slow way (every split of every star tried), which the matcher
// must agree with on every pattern and path.
bool matches_by_every_split(std::string_view pattern, std::string_view path) {
  if (pattern.empty()) return path.empty();
  if (pattern[0] == '*') {
    if (pattern.size() == 1) return true;
    for (std::size_t k = 0;; ++k) {
      if (matches_by_every_split(pattern.substr(1), path.substr(k))) return true;
      if (k == path.size() || path[k] == '/') return false;
    }
  }
  return !path.empty() && pattern[0] == path[0] && matches_by_every_split(pattern.substr(1), path.substr(1));
}

TEST(RequestPath, TheMatcherAgreesWithEverySplitTriedOnRandomPatterns) {
  std::mt19937 rng(20261128);
  const auto word = [&](const char* alphabet, std::size_t most) {
    std::string w;
    const std::size_t n = rng() % (most + 1), k = std::strlen(alphabet);
    for (std::size_t i = 0; i < n; ++i) w += alphabet[rng() % k];
    return w;
  };
  for (int i = 0; i < 200000; ++i) {
    const std::string pattern = "/" + word("ab*/", 7), path = "/" + word("ab/", 9);
    ASSERT_EQ(path_matches(pattern, path), matches_by_every_split(pattern, path)) << pattern << " " << path;
  }
}

// A rule's stars cannot make one request cost an io thread minutes: each split of each star
// tried in turn was about (length / stars)^stars steps, here hours, and is now linear.
TEST(RequestPath, ManyStarsAgainstALongSegmentAnswerAtOnce) {
  const std::string dashes(8000, '-');
  EXPECT_FALSE(path_matches("/a/*-*-*-*-*.json", "/a/" + dashes));
  EXPECT_TRUE(path_matches("/a/*-*-*-*-*.json", "/a/" + dashes + ".json"));
  EXPECT_FALSE(path_matches("/a/*-*-*-*-*/x", "/a/" + dashes + "/y"));
  EXPECT_TRUE(path_matches("/a/*-*-*-*-*/x", "/a/" + dashes + "/x"));
}

TEST(RequestPath, TricksThatWouldEscapeARuleEitherResolveOutsideItOrAreRefused) {
  // What an agent allowed /repos/acme/* would try, to reach /repos/evil.
  for (const char* t : {"/repos/acme/../evil", "/repos/acme/./../evil", "/repos//acme/../../repos/evil"}) {
    RequestPath r = normalize_request_path(t);
    ASSERT_TRUE(r.ok()) << t;
    EXPECT_FALSE(path_matches("/repos/acme/*", r.path)) << t << " -> " << r.path;
  }
  for (const char* t : {"/repos/acme/%2e%2e/evil", "/repos/acme/..%2fevil", "/repos/acme/..;/evil", "/repos/acme/..\\evil"})
    EXPECT_FALSE(normalize_request_path(t).ok()) << t;
}

}  // namespace
}  // namespace netbox::policy
