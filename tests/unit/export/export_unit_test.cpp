// The export's pure parts: what --export accepts, and the placeholder a field may not carry
// into an export in any spelling.
#include "netbox/audit/placeholder_spelling.hpp"
#include "netbox/export/ocsf.hpp"
#include "netbox/export/placeholders.hpp"
#include "netbox/export/sink_spec.hpp"

#include <gmock/gmock.h>

#include <future>
#include <random>
#include <regex>
#include <stdexcept>
#include <vector>

namespace netbox::siem {
namespace {

using ::testing::HasSubstr;

TEST(SinkSpec, AcceptsTheTwoKinds) {
  auto f = parse_sink("ocsf-jsonl:/var/log/netbox/ocsf.jsonl");
  EXPECT_EQ(f.kind, SinkSpec::Kind::ocsf_jsonl);
  EXPECT_EQ(f.path, "/var/log/netbox/ocsf.jsonl");
  auto o = parse_sink("otlp-http://127.0.0.1:4318");
  EXPECT_EQ(o.kind, SinkSpec::Kind::otlp_http);
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 4318);
  EXPECT_EQ(o.target, "/v1/logs");
  auto v6 = parse_sink("otlp-http://[::1]:4318/custom/logs");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.target, "/custom/logs");
}

TEST(SinkSpec, RefusesWhatItCannotUseSayingWhy) {
  for (const char* bad : {"ftp://127.0.0.1:21", "ocsf-jsonl:", "otlp-http://127.0.0.1", "otlp-http://:4318",
                          "otlp-http://h:0", "otlp-http://h:65536", "otlp-http://h:12x", "otlp-https://h:4318",
                          "otlp-http://[::1:4318", "otlp-http://h:4318/a b", "", "jsonl:/x"}) {
    try {
      parse_sink(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("'") + bad + "'"));
    }
  }
}

TEST(Placeholders, AreWithheldInEverySpellingTheTripwireSeesThrough) {
  const std::string p = "nbx-openai-00112233445566778899aabbccddeeff";
  for (std::string text : std::vector<std::string>{"/k/" + p, "/k/NBX-OPENAI-00112233445566778899AABBCCDDEEFF",
                           "/k/%6Ebx-openai-00112233445566778899aabbccddeeff",
                           "/k/%256Ebx-openai-00112233445566778899aabbccddeeff",
                           std::string("nbx-openai-0011223344556677.8899aabbccddeeff.other.test")}) {
    EXPECT_TRUE(withhold_placeholder(text)) << text;
    EXPECT_EQ(text.find("0011223344556677"), std::string::npos);
  }
  for (std::string text : std::vector<std::string>{"/v1/chat/completions", "nbx-docs.example.com", "/nbx-openai-0011"}) {
    const auto before = text;
    EXPECT_FALSE(withhold_placeholder(text));
    EXPECT_EQ(text, before);
  }
}

// The tripwire refuses a placeholder behind up to audit::kPlaceholderPercentRounds rounds of
// percent-encoding, and the refused row keeps the path as sent; the export decoded one round
// fewer, and exported "%25256E..." as it was. A host name's dots are dropped before
// decoding, as the tripwire drops them.
TEST(Placeholders, AreWithheldBehindAsManyRoundsOfPercentEncodingAsTheTripwireDecodes) {
  const std::string rest = "bx-openai-00112233445566778899aabbccddeeff";
  std::string n = "%6E";
  for (int round = 1; round <= audit::kPlaceholderPercentRounds; ++round, n.insert(1, "25")) {
    std::string text = "/k/" + n + rest;
    EXPECT_TRUE(withhold_placeholder(text)) << round << " rounds: " << text;
  }
  for (std::string text : {std::string("/k/%25256Ebx-openai-00112233445566778899aabbccddeeff"),
                           std::string("%2.56ebx-openai-0011223344556677.8899aabbccddeeff.other.test")}) {
    EXPECT_TRUE(withhold_placeholder(text)) << text;
    EXPECT_EQ(text.find("0011223344556677"), std::string::npos);
  }
}

// An agent chooses its paths and host names: 8 KB of "nbx-nbx-..." once cost a backtracking
// regex 0.7 s a field, on the export thread. Every field here is 64 KB; the text is searched
// in one pass, so this takes milliseconds (the old regex took minutes or overflowed its stack).
TEST(Placeholders, AnAdversarialFieldIsSearchedInOnePassAndAPlaceholderInItIsStillWithheld) {
  const std::string p = "nbx-openai-00112233445566778899aabbccddeeff";
  auto times = [](const std::string& unit, std::size_t bytes) {
    std::string s;
    while (s.size() < bytes) s += unit;
    return s;
  };
  const std::size_t k64 = 64 * 1024;
  const std::string hex31 = "00112233445566778899aabbccddeef";
  for (std::string text : {times("nbx-", k64), times("NBX-", k64), times("%6Ebx-", k64), times("nbx.", k64),
                           "nbx-" + times("-" + hex31, k64), "nbx-" + times("a-", k64) + hex31,
                           times("nbx-" + hex31 + "-", k64), times("nbx-openai-" + hex31 + "g/", k64),
                           times("-00112233445566778899aabbccddeeff", k64) + "/nbx-"}) {
    const auto before = text;
    EXPECT_FALSE(withhold_placeholder(text)) << before.substr(0, 80);
    EXPECT_EQ(text, before);
  }
  for (std::string text : {times("nbx-", k64) + "openai-00112233445566778899aabbccddeeff",
                           times("nbx-", k64) + "/" + p, "nbx-" + times("-" + hex31, k64) + "f",
                           times("%6Ebx-", k64) + p.substr(4), times("nbx-" + hex31 + "-", k64) + p,
                           times("nbx-openai-" + hex31 + "g/", k64) + p}) {
    const auto head = text.substr(0, 80);
    EXPECT_TRUE(withhold_placeholder(text)) << head;
    EXPECT_EQ(text.find("ccddeeff"), std::string::npos) << head;
  }
}

// The one-pass search means what the regex it replaced meant: compared on texts built
// from pieces of placeholders (short, where the regex is quick), with nothing to decode.
TEST(Placeholders, TheSearchFindsWhatTheRegexFound) {
  const std::regex shape("nbx-[a-z0-9_-]*-[0-9a-f]{32}");
  const std::vector<std::string> pieces{"nbx-", "-", "_", "openai", "0123456789abcdef", "0011223344556677",
                                        "89abcdef", "g", "/", "n", "bx-", "f", "nbx"};
  std::mt19937 rng(26);
  int found = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const std::size_t length = 37 + rng() % 40;
    while (text.size() < length) text += pieces[rng() % pieces.size()];
    const bool expected = std::regex_search(text, shape);
    std::string copy = text;
    EXPECT_EQ(withhold_placeholder(copy), expected) << text;
    found += expected;
  }
  EXPECT_GT(found, 200) << "the texts hold placeholders often enough to compare both answers";
}

TEST(Ocsf, ARefusedRequestIsItsActivityAndADetectionFinding) {
  audit::AuditRecord r;
  r.kind = "http";
  r.method = "POST";
  r.host = "evil.test";
  r.port = 80;
  r.path = "/nbx-openai-00112233445566778899aabbccddeeff";
  r.decision = "deny";
  r.rule = "credentials.openai";
  r.reason = "exfiltration attempt";
  r.status = 403;
  const auto records = ocsf_records(r, {"0.1.0", "host-a"}, "u-1");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["class_uid"], 4002);
  EXPECT_EQ(records[0]["activity_id"], 6);
  EXPECT_EQ(records[0]["type_uid"], 400206);
  EXPECT_EQ(records[0]["action_id"], 2);
  EXPECT_EQ(records[1]["class_uid"], 2004);
  EXPECT_EQ(records[1]["finding_info"]["uid"], "u-1");
  EXPECT_EQ(records[1]["finding_info"]["analytic"]["name"], "credentials.openai");
  for (const auto& j : records) EXPECT_EQ(j.dump().find("00112233"), std::string::npos) << j.dump();
}

// The process that opened the connection (issue 27's attribution): its executable goes
// into the record, whether the writer had settled it or the lookup's answer is in; its
// argv never does (a command line may hold a secret), nor a placeholder in its path.
TEST(Ocsf, TheClientExecutableIsInTheRecordButNotItsArgv) {
  audit::AuditRecord r;
  r.kind = "http";
  r.method = "GET";
  r.host = "api.test";
  r.port = 80;
  r.decision = "allow";
  std::promise<audit::ProcessOrigin> lookup;
  r.origin_later = lookup.get_future().share();
  EXPECT_FALSE(ocsf_records(r, {"0.1.0", "host-a"}, "u-1")[0]["unmapped"]["netbox"].contains("client_exe"))
      << "an answer still under way is not waited for";
  lookup.set_value(audit::ProcessOrigin{42, "/usr/bin/curl", "curl -H 'Authorization: Bearer sk-secret' https://api.test"});
  const auto records = ocsf_records(r, {"0.1.0", "host-a"}, "u-1");
  EXPECT_EQ(records[0]["unmapped"]["netbox"]["client_exe"], "/usr/bin/curl");
  EXPECT_EQ(records[0].dump().find("sk-secret"), std::string::npos) << records[0].dump();
  r.origin_later = {};
  r.origin = audit::ProcessOrigin{42, "/tmp/nbx-openai-00112233445566778899aabbccddeeff/tool", "tool"};
  EXPECT_EQ(ocsf_records(r, {"0.1.0", "host-a"}, "u-1")[0].dump().find("00112233"), std::string::npos);
}

}  // namespace
}  // namespace netbox::siem
