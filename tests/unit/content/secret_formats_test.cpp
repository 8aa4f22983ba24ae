// The content rules' secret finder and encoded-label check, as an injected agent would try
// to get past them: each format as written and behind percent, base64 (both alphabets,
// glued mid-group) and hex; and the ordinary text and names that must stay clean.
#include "netbox/content/secret_formats.hpp"

#include "support/secret_samples.hpp"

#include <gtest/gtest.h>

#include <set>

namespace netbox::content {
namespace {

using test::base64;
using test::encode_bits;
using test::hex;
using test::kAlnum;
using test::kUpperDigits;
using test::percent_all;
using test::run_of;
using Sample = test::SecretSample;

std::vector<Sample> samples() {
  return {
      {"private_key", std::string("-----BEGIN ") + "RSA PRIVATE KEY-----\nMIIEow"},
      {"private_key", std::string("-----BEGIN ") + "OPENSSH PRIVATE KEY-----"},
      {"aws_access_key_id", "AKIA" + run_of(kUpperDigits, 16, 1)},
      {"aws_access_key_id", "ASIA" + run_of(kUpperDigits, 16, 2)},
      {"aws_secret_access_key", "aws_secret_access_key = " + run_of(kAlnum, 40, 3)},
      {"github_token", "ghp_" + run_of(kAlnum, 36, 4)},
      {"github_token", "github_pat_" + run_of(kAlnum, 82, 5)},
      {"gitlab_token", "glpat-" + run_of(kAlnum, 20, 6)},
      {"slack_token", "xoxb-" + run_of("0123456789", 12, 7) + "-" + run_of(kAlnum, 24, 8)},
      {"slack_webhook", "https://hooks.slack.com/services/T" + run_of(kUpperDigits, 8, 9) + "/B" +
                            run_of(kUpperDigits, 8, 10) + "/" + run_of(kAlnum, 24, 11)},
      {"anthropic_api_key", "sk-ant-api03-" + run_of(kAlnum, 80, 12)},
      {"openai_api_key", "sk-proj-" + run_of(kAlnum, 48, 13)},
      {"openai_api_key", "sk-" + run_of(kAlnum, 48, 14)},
      {"google_api_key", "AIza" + run_of(kAlnum, 35, 15)},
      {"stripe_key", "sk_live_" + run_of(kAlnum, 24, 16)},
      {"npm_token", "npm_" + run_of(kAlnum, 36, 17)},
      {"huggingface_token", "hf_" + run_of(kAlnum, 34, 18)},
      {"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + run_of(kAlnum, 43, 19)},
  };
}

void expect_found(const std::string& text, std::string_view kind, SecretEncoding enc, const std::string& value) {
  const auto f = find_secret(text);
  ASSERT_TRUE(f) << "not found: " << text;
  EXPECT_EQ(f->kind, kind) << text;
  EXPECT_EQ(f->encoding, enc) << text;
  ASSERT_EQ(f->digest.size(), 12u);
  EXPECT_EQ(value.find(f->digest), std::string::npos);
}

TEST(SecretFormatsTest, EveryFormatIsFoundAsWrittenInAUrlAHeaderAndABody) {
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.kind);
    expect_found("/upload?note=" + s.value + "&x=1", s.kind, SecretEncoding::plain, s.value);
    expect_found("X-Debug: " + s.value, s.kind, SecretEncoding::plain, s.value);
    expect_found(R"({"log": "found )" + s.value + R"( in ~/.env"})", s.kind, SecretEncoding::plain, s.value);
  }
}

TEST(SecretFormatsTest, EveryFormatIsFoundBehindPercentBase64AndHex) {
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.kind);
    expect_found("/u?d=" + percent_all(s.value), s.kind, SecretEncoding::percent, s.value);
    expect_found(R"({"blob": ")" + base64(s.value, false) + R"("})", s.kind, SecretEncoding::base64, s.value);
    expect_found("/u/" + base64(s.value, true), s.kind, SecretEncoding::base64, s.value);
    // Glued after other characters of the alphabet, so its groups start mid-run.
    expect_found("x=q" + base64(s.value, false), s.kind, SecretEncoding::base64, s.value);
    expect_found("x=qq" + base64("ab" + s.value, true), s.kind, SecretEncoding::base64, s.value);
    expect_found("d=" + hex(s.value), s.kind, SecretEncoding::hex, s.value);
    expect_found("d=f" + hex(s.value), s.kind, SecretEncoding::hex, s.value);
    // base64 in a query string, its padding percent-encoded.
    std::string b = base64(s.value, false);
    std::string padded;
    for (char c : b) padded += c == '=' ? std::string("%3D") : c == '+' ? std::string("%2B") : c == '/' ? std::string("%2F") : std::string(1, c);
    expect_found("/u?d=" + padded, s.kind, SecretEncoding::base64, s.value);
  }
}

// find_secret skips any text shorter than kShortestSecret: every format's shortest match is
// found and no shorter than that bound, and one character less is not a match.
TEST(SecretFormatsTest, NoFormatMatchesFewerCharactersThanTheShortcutSkips) {
  const std::vector<Sample> shortest = {
      {"private_key", std::string("-----BEGIN ") + "PRIVATE KEY-----"},
      {"aws_access_key_id", "AKIA" + run_of(kUpperDigits, 16, 1)},
      {"aws_secret_access_key", "secret_access_key=" + run_of(kAlnum, 40, 3)},
      {"github_token", "ghp_" + run_of(kAlnum, 36, 4)},
      {"gitlab_token", "gldt-" + run_of(kAlnum, 20, 6)},
      {"slack_token", "xoxb-" + run_of("0123456789", 10, 7)},
      {"slack_webhook", "hooks.slack.com/services/T" + run_of(kUpperDigits, 6, 9) + "/B" +
                            run_of(kUpperDigits, 6, 10) + "/" + run_of(kAlnum, 16, 11)},
      {"anthropic_api_key", "sk-ant-" + run_of(kAlnum, 20, 12)},
      {"openai_api_key", "sk-" + run_of(kAlnum, 40, 14)},
      {"google_api_key", "AIza" + run_of(kAlnum, 35, 15)},
      {"stripe_key", "rk_test_" + run_of(kAlnum, 24, 16)},
      {"npm_token", "npm_" + run_of(kAlnum, 36, 17)},
      {"huggingface_token", "hf_" + run_of(kAlnum, 34, 18)},
      {"jwt", "eyJ" + run_of(kAlnum, 10, 19) + ".eyJ" + run_of(kAlnum, 10, 20) + "." + run_of(kAlnum, 16, 21)},
  };
  std::set<std::string> kinds;
  for (const auto& f : secret_formats()) kinds.insert(std::string(f.kind));
  std::size_t fewest = SIZE_MAX;
  for (const auto& s : shortest) {
    SCOPED_TRACE(s.value);
    const auto f = find_secret(s.value);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, s.kind);
    EXPECT_FALSE(find_secret(s.value.substr(0, s.value.size() - 1))) << "one character less still matches";
    EXPECT_GE(s.value.size(), kShortestSecret);
    fewest = std::min(fewest, s.value.size());
    kinds.erase(s.kind);
  }
  EXPECT_TRUE(kinds.empty()) << "a format without its shortest match here: " << *kinds.begin();
  EXPECT_EQ(fewest, kShortestSecret) << "the bound should be the shortest format's, not below it";
}

TEST(SecretFormatsTest, TheDigestMatchesOneValueAndNoOther) {
  const auto a = find_secret("ghp_" + run_of(kAlnum, 36, 40));
  const auto again = find_secret("token ghp_" + run_of(kAlnum, 36, 40) + " again");
  const auto b = find_secret("ghp_" + run_of(kAlnum, 36, 41));
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(a->digest, again->digest);
  EXPECT_NE(a->digest, b->digest);
}

TEST(SecretFormatsTest, OrdinaryTextCodeAndIdentifiersStayClean) {
  const std::vector<std::string> clean = {
      "The quick brown fox jumps over the lazy dog, then asks the task-runner-configuration-file for more.",
      "pip install scikit-learn pandas; npm install --save-dev typescript eslint",
      "def risk_assessment(disk_usage_threshold_percentage): return sk_learn_model.predict(x)",
      "commit 0f3c8e1d2b4a6978c5e3f1a2b4c6d8e0f1a2b3c4 Merge branch 'agent/fix-tests'",
      "request-id: 3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
      "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
      "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
      "GET /repos/anthropics/claude-code/contents/src/components/AskUserQuestionToolRenderer.tsx",
      R"({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]})",
      "Authorization: Bearer eyJhbGciOi",  // too short to be a token
      "AKIA is the prefix of AWS access key ids",
      "data:image/png;base64," + base64(run_of(kAlnum, 3000, 77), false),
      "sha256=" + hex(run_of(kAlnum, 64, 78)),
  };
  for (const auto& text : clean) {
    const auto f = find_secret(text);
    EXPECT_FALSE(f) << text.substr(0, 120) << " read as " << (f ? f->kind : "");
  }
}

TEST(SecretFormatsTest, TheListIsVersionedWithUniqueKinds) {
  EXPECT_EQ(kSecretFormatsVersion, 1);
  std::set<std::string_view> kinds;
  for (const auto& f : secret_formats()) {
    EXPECT_TRUE(kinds.insert(f.kind).second) << f.kind;
    EXPECT_FALSE(f.description.empty());
  }
  for (const auto& s : samples()) EXPECT_TRUE(kinds.contains(s.kind)) << s.kind;
  EXPECT_EQ(kinds.size(), 14u);
}

// The scan is bounded: what lies past kMaxSecretScan is not looked at (the caller's window
// decides what happens to bodies longer than it).
TEST(SecretFormatsTest, ScansAtMostItsBound) {
  const std::string key = "ghp_" + run_of(kAlnum, 36, 50);
  EXPECT_TRUE(find_secret(std::string(kMaxSecretScan - 100, ' ') + key));
  EXPECT_FALSE(find_secret(std::string(kMaxSecretScan, ' ') + key));
}

TEST(EncodedLabelTest, LabelsThatCarryDataAreNamed) {
  const auto secret = "AKIA" + run_of(kUpperDigits, 16, 60);
  // base32 (lower case) of the key, as DNS exfiltration tools spell it
  const std::string b32 = encode_bits(secret, "abcdefghijklmnopqrstuvwxyz234567", 5);
  for (const std::string& host : std::vector<std::string>{hex(secret) + ".x.example.com", b32 + ".example.com", "cdn." + hex("0123456789ab") + ".example.net",
                                 "e2cd67cabbc6b435c1c2f2f8.tunnel.example.org", "ktj42xlcv4hvoh4je35vj4rzgvfeyrcw.example.com",
                                 "bkylbkshofjptkwfwidjo5eshnnryhww.example.com"}) {
    const auto e = encoded_label(host);
    ASSERT_TRUE(e) << host;
    EXPECT_FALSE(e->why.empty());
    EXPECT_NE(host.find(e->label), std::string::npos);
  }
}

TEST(EncodedLabelTest, OrdinaryNamesPass) {
  for (const std::string_view host :
       {"objects.githubusercontent.com", "my-load-balancer-1234567890.us-west-2.elb.amazonaws.com",
        "thisisaverylongsubdomainname.example.com", "production-eu-west-1-loadbalancer.example.com",
        "registry-npmjs-org-mirror-europe.example.com", "d1a2b3c4d5e6f7.cloudfront.net",
        "b8a3c2f1-4d5e-4f6a-9b8c-7d6e5f4a3b2c.blob.example.net", "lb-0123456789abcdef0-1234567890abcdef.example.com",
        "ec2-203-0-113-25.compute-1.amazonaws.com", "xn--bcher-kva.example", "storage.googleapis.com", "api.anthropic.com",
        "internationalizationandlocalization.example.org"}) {
    const auto e = encoded_label(host);
    EXPECT_FALSE(e) << host << ": " << (e ? e->why : "");
  }
}

}  // namespace
}  // namespace netbox::content
