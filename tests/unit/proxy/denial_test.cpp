// The answers netbox gives instead of forwarding: what an agent (or a language model
// reading it) is told.
#include "pipeline/denial.hpp"

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

namespace http = boost::beast::http;

TEST(Denial, APolicyDenialSaysWhatWhyWhichRuleAndWhatToDo) {
  const auto res = make_refusal({403, Outcome::deny, "GET http://evil.example/", "deny[0] *.evil.example",
                                 "evil.example matches deny[0] *.evil.example", {}},
                                11, true);
  EXPECT_EQ(res.result_int(), 403U);
  EXPECT_EQ(res["X-Netbox-Decision"], "deny");
  EXPECT_EQ(res["X-Netbox-Reason"], "evil.example matches deny[0] *.evil.example");
  EXPECT_EQ(res[http::field::cache_control], "no-store");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(res.body(),
            "netbox blocked this request by policy.\n"
            "Request: GET http://evil.example/\n"
            "Reason: evil.example matches deny[0] *.evil.example\n"
            "Rule: deny[0] *.evil.example\n"
            "What you can do: Use a destination the policy allows, or ask the operator to add this one to the "
            "policy. Retrying will not help.\n");
  EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
}

TEST(Denial, ACapNamesItsLimitAndSaysWhenToRetry) {
  const auto res = make_refusal({429, Outcome::cap, "CONNECT a.test:443", "limits.max_connections_per_host",
                                 "there are already 4 open connections to a.test", 1u},
                                11, false);
  EXPECT_EQ(res["X-Netbox-Decision"], "cap");
  EXPECT_EQ(res[http::field::retry_after], "1");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_NE(res.body().find("a connection limit was reached"), std::string::npos) << res.body();
  EXPECT_NE(res.body().find("Limit: limits.max_connections_per_host\n"), std::string::npos) << res.body();
  EXPECT_NE(res.body().find("Wait a moment and retry"), std::string::npos) << res.body();
}

TEST(Denial, AnErrorWithoutAReasonFallsBackToTheStatusText) {
  const auto res = make_refusal({502, Outcome::error, {}, {}, {}, {}}, 10, false);
  EXPECT_EQ(res.version(), 10U);
  EXPECT_EQ(res["X-Netbox-Decision"], "error");
  EXPECT_NE(res.body().find("could not complete this request"), std::string::npos);
  EXPECT_NE(res.body().find("Reason: Bad Gateway\n"), std::string::npos) << res.body();
  EXPECT_EQ(res.body().find("Rule:"), std::string::npos) << "no rule, no Rule line";
}

TEST(Denial, ControlCharactersNeverReachTheReasonHeader) {
  const auto res = make_refusal({400, Outcome::error, {}, "request", "bad\r\nX-Injected: 1\x7f", {}}, 11, false);
  EXPECT_EQ(res["X-Netbox-Reason"], "bad  X-Injected: 1");  // DEL became a space, trimmed as trailing
  EXPECT_EQ(res.count("X-Injected"), 0U);
}

TEST(Denial, EveryStatusGetsAdvice) {
  for (unsigned s : {400u, 403u, 405u, 408u, 413u, 414u, 429u, 431u, 502u, 503u, 504u}) {
    const auto advice = advice_for({s, Outcome::error, {}, {}, {}, {}});
    EXPECT_FALSE(advice.empty()) << s;
  }
  EXPECT_NE(advice_for({503, Outcome::error, {}, {}, {}, {}}).find("audit"), std::string::npos);
}

TEST(Outcome, OneWordForTheHeaderTheRowAndTheMetric) {
  EXPECT_EQ(to_string(Outcome::allow), "allow");
  EXPECT_EQ(to_string(Outcome::report), "report");
  EXPECT_EQ(to_string(Outcome::deny), "deny");
  EXPECT_EQ(to_string(Outcome::cap), "cap");
  EXPECT_EQ(to_string(Outcome::error), "error");
  EXPECT_EQ(outcome_of(policy::Verdict::report), Outcome::report);
  for (auto o : {Outcome::allow, Outcome::report, Outcome::deny, Outcome::cap, Outcome::error})
    EXPECT_TRUE(audit::is_decision(to_string(o)));
}

}  // namespace
}  // namespace netbox::proxy
