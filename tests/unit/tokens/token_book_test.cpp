// Client tokens (issue 26 item 5): the token's shape, the book's verdicts (a stolen id with
// a guessed secret, a revoked or expired token, a token from another book), what a
// refusal says (never the secret), the book file's checks, and the Proxy-Authorization forms
// real clients send.
#include "netbox/tokens/proxy_credential.hpp"
#include "netbox/tokens/token_book.hpp"

#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <fstream>

namespace netbox::tokens {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr std::int64_t kNow = 1'800'000'000;

std::string basic(const std::string& pair) {
  std::string out(4 * ((pair.size() + 2) / 3) + 1, '\0');
  out.resize(static_cast<std::size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                      reinterpret_cast<const unsigned char*>(pair.data()),
                                                      static_cast<int>(pair.size()))));
  return "Basic " + out;
}

TEST(ClientToken, AnIssuedTokenHasTheDocumentedShapeAndOnlyItsDigestIsKept) {
  const auto t = issue_token("ci", "builders", 8h, kNow);
  ASSERT_TRUE(t.token.starts_with("nbt1_"));
  EXPECT_EQ(t.token.size(), 5u + 12 + 1 + 43);
  auto parts = parse_token(t.token);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->id, t.entry.id);
  EXPECT_EQ(t.entry.digest, secret_digest(parts->secret));
  EXPECT_THAT(t.entry.digest, Not(HasSubstr(parts->secret)));
  EXPECT_EQ(t.entry.expires, kNow + 8 * 3600);
  // Two tokens never share an id or a secret.
  const auto u = issue_token("ci", "builders", 8h, kNow);
  EXPECT_NE(u.entry.id, t.entry.id);
  EXPECT_NE(u.entry.digest, t.entry.digest);
}

TEST(ClientToken, TextsOfAnotherShapeAreNotTokens) {
  const auto t = issue_token("ci", "", 1h, kNow).token;
  for (const std::string& bad : {std::string(), std::string("nbt1_"), t.substr(0, t.size() - 1), t + "A",
                                "nbt2" + t.substr(4), "nbt1_0123456789AB_" + t.substr(18),  // upper-case id
                                t.substr(0, 17) + "-" + t.substr(18), t.substr(0, 20) + "+" + t.substr(21)})
    EXPECT_FALSE(parse_token(bad)) << bad;
}

TEST(TokenBook, AGoodTokenGrantsItsAgentAndProfile) {
  const auto t = issue_token("ci-runner", "builders", 1h, kNow);
  TokenBook book({t.entry});
  const auto v = book.verify(t.token, kNow + 10);
  ASSERT_TRUE(v.grant) << v.why;
  EXPECT_EQ(v.grant->agent, "ci-runner");
  EXPECT_EQ(v.grant->profile, "builders");
  EXPECT_EQ(v.grant->id, t.entry.id);
}

TEST(TokenBook, AGuessedSecretARevokedAnExpiredAndAForeignTokenAreRefusedWithoutTheSecret) {
  const auto t = issue_token("ci", "", 1h, kNow);
  const auto other = issue_token("ci", "", 1h, kNow);  // another book's
  TokenBook book({t.entry});
  const auto parts = *parse_token(t.token);
  std::string guessed = t.token;
  guessed.back() = guessed.back() == 'A' ? 'B' : 'A';  // the known id, a secret one character off

  const auto wrong = book.verify(guessed, kNow);
  EXPECT_FALSE(wrong.grant);
  EXPECT_THAT(wrong.why, HasSubstr("does not match"));
  const auto foreign = book.verify(other.token, kNow);
  EXPECT_FALSE(foreign.grant);
  EXPECT_THAT(foreign.why, HasSubstr("is not in the token book"));
  const auto expired = book.verify(t.token, kNow + 3600);
  EXPECT_FALSE(expired.grant);
  EXPECT_THAT(expired.why, HasSubstr("has expired"));
  ASSERT_TRUE(book.revoke(t.entry.id));
  const auto revoked = book.verify(t.token, kNow);
  EXPECT_FALSE(revoked.grant);
  EXPECT_THAT(revoked.why, HasSubstr("was revoked"));
  EXPECT_FALSE(book.revoke("000000000000"));
  for (const auto& v : {wrong, foreign, expired, revoked}) {
    EXPECT_THAT(v.why, Not(HasSubstr(parts.secret)));
    EXPECT_THAT(v.why, Not(HasSubstr(parse_token(other.token)->secret)));
  }
  EXPECT_FALSE(book.verify("Basic xyz", kNow).grant);
}

TEST(TokenBook, TheFileRoundTripsIsPrivateAndBadFilesAreNamedByKey) {
  test::TempDir dir;
  const auto path = dir.path() / "client-tokens.json";
  const auto t = issue_token("ci", "builders", 1h, kNow);
  TokenBook book({t.entry});
  save_token_book(path, book);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(text, Not(HasSubstr(parse_token(t.token)->secret))) << "only the digest is written";
  const auto back = load_token_book(path);
  ASSERT_EQ(back.entries().size(), 1u);
  EXPECT_TRUE(back.verify(t.token, kNow).grant);

  EXPECT_TRUE(load_token_book(dir.path() / "missing.json", true).entries().empty());
  EXPECT_THROW(load_token_book(dir.path() / "missing.json"), TokenBookError);

  const auto bad = [&](const std::string& body, const std::string& expected) {
    const auto p = dir.write("bad.json", body);
    ::chmod(p.c_str(), 0600);
    try {
      load_token_book(p);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const TokenBookError& e) {
      EXPECT_THAT(e.what(), HasSubstr(p.string())) << body;
      EXPECT_THAT(e.what(), HasSubstr(expected)) << body;
    }
  };
  bad("{", "not JSON");
  bad(R"({"version": 2, "tokens": []})", "version");
  bad(R"({"version": 1})", "tokens");
  bad(R"({"version": 1, "tokens": [{"id": "0123456789ab", "agent": "a", "sha256": "00", "created": 1, "expires": 2}]})",
      "tokens[0].sha256");
  bad(R"({"version": 1, "tokens": [{"id": "XYZ", "agent": "a", "sha256": "00", "created": 1, "expires": 2}]})",
      "tokens[0].id");
  bad(R"({"version": 1, "tokens": [{"id": "0123456789ab", "agent": "a", "created": 1, "expires": 2}]})",
      "tokens[0].sha256: missing");

  // Anyone who may write the book can mint an identity: a world-writable one is refused.
  ::chmod(path.c_str(), 0666);
  try {
    load_token_book(path);
    ADD_FAILURE() << "a world-writable book was read";
  } catch (const TokenBookError& e) {
    EXPECT_THAT(e.what(), HasSubstr("0666"));
  }
}

TEST(ProxyCredential, TheFormsClientsSendGiveTheToken) {
  const std::string token = issue_token("ci", "", 1h, kNow).token;
  EXPECT_EQ(token_from_proxy_authorization(basic("agent:" + token)), token);  // curl's http://agent:TOKEN@proxy
  EXPECT_EQ(token_from_proxy_authorization("  " + basic("anyone:" + token) + " "), token);
  EXPECT_EQ(token_from_proxy_authorization("basic " + basic(":" + token).substr(6)), token);
  EXPECT_EQ(token_from_proxy_authorization("Bearer " + token), token);
  EXPECT_FALSE(token_from_proxy_authorization(basic("agent-only")));
  EXPECT_FALSE(token_from_proxy_authorization(basic("agent:")));
  EXPECT_FALSE(token_from_proxy_authorization("Basic !!!!"));
  EXPECT_FALSE(token_from_proxy_authorization("Digest username=x"));
  EXPECT_FALSE(token_from_proxy_authorization(""));
  EXPECT_FALSE(token_from_proxy_authorization("Basic"));
}

}  // namespace
}  // namespace netbox::tokens
