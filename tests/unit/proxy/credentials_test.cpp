// The credentials' values, injection and the tripwire's scanner (proxy/src/inspect/credentials.hpp).
#include "inspect/credentials.hpp"
#include "inspect/secret_forms.hpp"

#include "netbox/audit/placeholder_spelling.hpp"
#include "netbox/policy/load.hpp"

#include <gmock/gmock.h>

#include <set>

namespace netbox::proxy {
namespace {

using ::testing::HasSubstr;
namespace http = boost::beast::http;

constexpr const char* kPlaceholder = "nbx-openai-0123456789abcdef0123456789abcdef";

policy::Policy policy_with_openai() {
  return policy::parse_policy(R"({"version": 1, "allow": ["api.openai.com", "*.example.com"],
    "inspect": ["api.openai.com"], "credentials": [{"name": "openai", "hosts": ["api.openai.com"],
    "header": "Authorization", "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}]})",
                              "test.json");
}

AgentCredentials openai() {
  std::vector<CredentialSecret> s;
  s.push_back({"openai", kPlaceholder, Secret("sk-real")});
  return bind_credentials(policy_with_openai().base, std::move(s));
}

TEST(Placeholder, IsNbxNameAndThirtyTwoHexDigitsNewEachTime) {
  const auto a = make_placeholder("openai"), b = make_placeholder("openai");
  EXPECT_THAT(a, ::testing::MatchesRegex("nbx-openai-[0-9a-f]{32}"));
  EXPECT_NE(a, b);
}

TEST(Secret, AMovedFromSecretHoldsNothing) {
  Secret s("sk-real");
  Secret t(std::move(s));
  EXPECT_TRUE(s.empty());  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_EQ(t.reveal(), "sk-real");
  Secret u;
  u = std::move(t);
  EXPECT_TRUE(t.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(u.reveal(), "sk-real");
}

TEST(Scanner, FindsThePlaceholderAsSentInAnyCaseAndPercentEncoded) {
  EXPECT_TRUE(holds_placeholder(std::string("x=") + kPlaceholder, kPlaceholder));
  EXPECT_TRUE(holds_placeholder("NBX-OPENAI-0123456789ABCDEF0123456789ABCDEF", kPlaceholder));
  EXPECT_TRUE(holds_placeholder("q=%6e%62%78-openai-0123456789abcdef0123456789abcdef", kPlaceholder));
  EXPECT_TRUE(holds_placeholder("q=%256E%2562x-openai-0123456789abcdef0123456789abcdef", kPlaceholder));
  EXPECT_FALSE(holds_placeholder("nbx-openai-0123456789abcdef0123456789abcde", kPlaceholder));
  EXPECT_FALSE(holds_placeholder("%", kPlaceholder));
  EXPECT_FALSE(holds_placeholder("", kPlaceholder));
}

// The bound the SIEM export shares (audit/placeholder_spelling.hpp): the export withholds a
// row's text as far as this scanner decodes it, so the scanner must decode exactly that far.
TEST(Scanner, DecodesAsManyRoundsOfPercentEncodingAsTheExportWithholds) {
  std::string n = "%6E";
  for (int round = 1; round <= audit::kPlaceholderPercentRounds; ++round, n.insert(1, "25"))
    EXPECT_TRUE(holds_placeholder("/k/" + n + "bx-openai-0123456789abcdef0123456789abcdef", kPlaceholder)) << n;
  EXPECT_FALSE(holds_placeholder("/k/" + n + "bx-openai-0123456789abcdef0123456789abcdef", kPlaceholder))
      << n << ": one round more than the bound";
}

TEST(Scanner, SaysWhereThePlaceholderOfAnUnlistedHostIs) {
  const auto creds = openai();
  http::fields f;
  f.set("X-Trace", std::string("id ") + kPlaceholder);
  auto hit = scan_request(creds, "evil.example.com", 443, f, "/upload");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->credential->name, "openai");
  EXPECT_EQ(hit->where, "the header X-Trace");

  http::fields none;
  hit = scan_request(creds, "evil.example.com", 443, none, std::string("/k/") + kPlaceholder);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->where, "the path");
  hit = scan_request(creds, "evil.example.com", 443, none, "/k?key=%6Ebx-openai-0123456789abcdef0123456789abcdef");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->where, "the query");

  // To its own host the placeholder is what the agent is meant to send.
  EXPECT_FALSE(scan_request(creds, "api.openai.com", 443, f, std::string("/v1?k=") + kPlaceholder));
  // ... and to a host that merely looks like it, it is not.
  EXPECT_TRUE(scan_request(creds, "api.openai.com.evil.example.com", 443, f, "/v1"));
}

TEST(Scanner, ReadsTheFirst64KiBOfABody) {
  const auto creds = openai();
  std::string body(Tripwire::kBodyScan - 20, 'a');
  body += kPlaceholder;  // straddles the 64 KiB line: its start is inside
  EXPECT_FALSE(scan_body(creds, "evil.example.com", 443, body)) << "only what is inside the first 64 KiB counts";
  std::string inside(Tripwire::kBodyScan - 100, 'a');
  inside += kPlaceholder;
  auto hit = scan_body(creds, "evil.example.com", 443, inside);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->where, "the body");
  EXPECT_FALSE(scan_body(creds, "api.openai.com", 443, inside));
}

TEST(Scanner, FindsAPlaceholderSpreadOverTheLabelsOfAHostName) {
  const auto creds = openai();
  auto hit = scan_host_name(creds, "nbx-openai-0123456789abcdef.0123456789abcdef.evil.example.com");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->where, "the host name");
  EXPECT_FALSE(scan_host_name(creds, "api.openai.com"));
}

TEST(Injection, SetsTheHeaderOnlyForTheCredentialsHosts) {
  const auto creds = openai();
  http::fields replaced;
  replaced.set(http::field::authorization, std::string("Bearer ") + kPlaceholder);
  replaced.set("X-Other", kPlaceholder);
  EXPECT_EQ(inject_credentials(creds, "api.openai.com", 443, replaced), "openai");
  EXPECT_EQ(replaced[http::field::authorization], "Bearer sk-real");
  EXPECT_EQ(replaced["X-Other"], kPlaceholder) << "nothing else is rewritten";

  http::fields added;
  EXPECT_EQ(inject_credentials(creds, "api.openai.com", 443, added), "openai");
  EXPECT_EQ(added[http::field::authorization], "Bearer sk-real");

  http::fields elsewhere;
  EXPECT_EQ(inject_credentials(creds, "www.example.com", 443, elsewhere), "");
  EXPECT_EQ(elsewhere.count(http::field::authorization), 0u);
}

TEST(Answer, AReflectedSecretIsReplacedByThePlaceholderOrTheAnswerRefused) {
  const auto creds = openai();
  http::fields plain;
  std::string body = R"({"authorization":"Bearer sk-real","again":"sk-real"})";
  EXPECT_EQ(redact_answer(creds, "api.openai.com", 443, "OK", plain, body), "");
  EXPECT_EQ(body, std::string(R"({"authorization":"Bearer )") + kPlaceholder + R"(","again":")" + kPlaceholder + "\"}");

  http::fields in_header;
  in_header.set("X-Echo", "Bearer sk-real");
  std::string none;
  EXPECT_THAT(redact_answer(creds, "api.openai.com", 443, "OK", in_header, none), HasSubstr("in its header (or trailer) X-Echo"));

  http::fields gzip;
  gzip.set(http::field::content_encoding, "gzip");
  EXPECT_THAT(redact_answer(creds, "api.openai.com", 443, "OK", gzip, none), HasSubstr("is encoded (gzip)"));
  http::fields identity;
  identity.set(http::field::content_encoding, "identity");
  EXPECT_EQ(redact_answer(creds, "api.openai.com", 443, "OK", identity, none), "");
  http::fields listed;
  listed.insert(http::field::content_encoding, "identity");
  listed.insert(http::field::content_encoding, "identity, br");
  EXPECT_THAT(redact_answer(creds, "api.openai.com", 443, "OK", listed, none), HasSubstr("is encoded (identity, br)"));
  EXPECT_THAT(redact_answer(creds, "api.openai.com", 443, "sk-real", plain, none), HasSubstr("in its status line"));
}

// Each standard escaping of a secret is found, at any place in a longer text; a text
// close to it is not.
TEST(SecretForms, FindsTheSecretJsonEscapedPercentEncodedOrInBase64) {
  const SecretForms forms("sk/live+5ecret=value");
  EXPECT_EQ(forms.found_in(R"({"k":"sk/live+5ecret=value"})"), "as sent");
  EXPECT_EQ(forms.found_in(R"({"k":"sk\/live+5ecret=value"})"), "JSON-escaped");
  EXPECT_EQ(forms.found_in(R"({"k":"\u0073\u006B\u002f\u006c\u0069\u0076\u0065+5ecret=value"})"), "JSON-escaped");
  EXPECT_EQ(forms.found_in("k=sk%2Flive%2b5ecret%3Dvalue&x=1"), "percent-encoded");
  EXPECT_EQ(forms.found_in("k=sk%252Flive%252b5ecret%253Dvalue"), "percent-encoded");
  EXPECT_EQ(forms.found_in(R"({"k":"sk%2Flive\u002b5ecret=value"})"), "JSON-escaped, percent-encoded");
  // base64 of "Bearer <secret>", of the secret after one and two other bytes, URL-safe.
  EXPECT_EQ(forms.found_in("QmVhcmVyIHNrL2xpdmUrNWVjcmV0PXZhbHVl"), "base64-encoded");
  EXPECT_EQ(forms.found_in("eHNrL2xpdmUrNWVjcmV0PXZhbHVl"), "base64-encoded");
  EXPECT_EQ(forms.found_in("eHhzay9saXZlKzVlY3JldD12YWx1ZQ=="), "base64-encoded");
  EXPECT_EQ(forms.found_in(R"("QmVhcmVyIHNrL2xpdmUrNWVjcmV0PXZhbHVl")"), "base64-encoded");
  EXPECT_EQ(forms.found_in("c2svbGl2ZSs1ZWNyZXQ9dmFsdWU"), "base64-encoded");
  EXPECT_EQ(forms.found_in("sk/live+5ecret=valu"), "");
  EXPECT_EQ(forms.found_in("SK/LIVE+5ECRET=VALUE"), "");
}

// Two spellings an echo endpoint could use that the first search missed (a hostile review):
// a JSON escape that was itself percent-encoded, and base64 wrapped over lines.
TEST(SecretForms, FindsTheSecretBehindPercentEncodedJsonEscapesAndInLineWrappedBase64) {
  const SecretForms forms("sk/live+5ecret=value");
  EXPECT_EQ(forms.found_in("k=sk%5C%2Flive+5ecret=value"), "percent-encoded, JSON-escaped");
  EXPECT_EQ(forms.found_in("k=sk%255C%252Flive+5ecret=value"), "percent-encoded, JSON-escaped");
  EXPECT_EQ(forms.found_in("QmVhcmVyIHNrL2xp\r\ndmUrNWVjcmV0PXZhbHVl"), "base64-encoded, line-wrapped");
  EXPECT_EQ(forms.found_in("-----BEGIN X-----\neHNrL2xpdmUr\nNWVjcmV0PXZhbHVl\n-----END X-----\n"),
            "base64-encoded, line-wrapped");
  EXPECT_EQ(forms.found_in(R"({"b64":"QmVhcmVyIHNrL2xp\ndmUrNWVjcmV0PXZhbHVl"})"),
            "base64-encoded, JSON-escaped, line-wrapped");
  EXPECT_EQ(forms.found_in("QmVhcmVyIHNrL2xp\nZmUrNWVjcmV0PXZhbHVl"), "") << "another secret's pieces";
}

TEST(Binding, RefusesACredentialWithoutItsSecretOrAStrangerOrABadPlaceholder) {
  const auto p = policy_with_openai();
  EXPECT_THAT([&] { bind_credentials(p.base, {}); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("credential openai of the agent's profile has no secret")));
  std::vector<CredentialSecret> stranger;
  stranger.push_back({"openai", kPlaceholder, Secret("sk")});
  stranger.push_back({"github", "nbx-github-0123456789abcdef", Secret("gh")});
  EXPECT_THAT([&] { bind_credentials(p.base, std::move(stranger)); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("credential github is not one of")));
  std::vector<CredentialSecret> short_one;
  short_one.push_back({"openai", "nbx-openai-1", Secret("sk")});
  EXPECT_THAT([&] { bind_credentials(p.base, std::move(short_one)); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("the placeholder is not nbx-openai-")));
}

}  // namespace
}  // namespace netbox::proxy
