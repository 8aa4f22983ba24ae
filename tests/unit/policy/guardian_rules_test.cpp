// The policy's `guardian` section (issue 25 items 3 and 6): the trigger grammar, rules,
// webhook and content rules' settings, merging per agent, and every mistake named with its
// key, its position and (for a trigger) the column inside the trigger.
#include "netbox/policy/load.hpp"
#include "policy_error.hpp"

#include <gtest/gtest.h>

using namespace netbox::policy;
using netbox::policy_test::error_of;
using netbox::policy_test::expect_fail;
using namespace std::chrono_literals;

namespace {

std::string with_guardian(const std::string& g) { return R"({"version": 1, "guardian": )" + g + "}"; }

GuardianTrigger trigger(std::string_view text) {
  auto t = parse_guardian_trigger(text);
  if (auto* e = std::get_if<TriggerError>(&t)) ADD_FAILURE() << text << ": column " << e->column << ": " << e->message;
  return std::get_if<GuardianTrigger>(&t) ? std::get<GuardianTrigger>(t) : GuardianTrigger{};
}

TriggerError trigger_error(std::string_view text) {
  auto t = parse_guardian_trigger(text);
  if (auto* e = std::get_if<TriggerError>(&t)) return *e;
  ADD_FAILURE() << "accepted trigger: " << text;
  return {};
}

}  // namespace

TEST(GuardianTrigger, CountedAndBareTriggers) {
  const auto t = trigger("denied >= 20 in 60s");
  EXPECT_EQ(t.event, GuardianEvent::denied);
  EXPECT_EQ(t.threshold, 20U);
  EXPECT_EQ(t.window, 60s);
  EXPECT_EQ(t.written, "denied >= 20 in 60s");
  const auto bare = trigger("budget_exhausted");
  EXPECT_EQ(bare.event, GuardianEvent::budget_exhausted);
  EXPECT_EQ(bare.threshold, 1U);
  EXPECT_EQ(bare.window, 0ms);
  EXPECT_EQ(trigger("internal_probe  >=  5  in  1h30m").window, 90min);
  EXPECT_EQ(trigger("secret_in_request >= 10000 in 500ms").threshold, 10000U);
  for (auto name : guardian_event_names()) {
    const auto each = trigger(name);
    EXPECT_EQ(to_string(each.event), name);
  }
}

// The column points at the word that is wrong, counted from 1 inside the trigger.
TEST(GuardianTrigger, MistakesNameTheColumnInsideTheTrigger) {
  struct Case {
    const char* text;
    std::size_t column;
    const char* fragment;
  };
  for (const Case& c : {
           Case{"", 1, "is empty"},
           Case{" denied", 1, "starts with a space"},
           Case{"denied ", 7, "ends with a space"},
           Case{"denid >= 5 in 60s", 1, "unknown event 'denid'; did you mean 'denied'?"},
           Case{"reboot", 1, "(events: denied, rate_limited, budget_exhausted, internal_probe, exfiltration_attempt, "
                             "secret_in_request, encoded_label)"},
           Case{"denied > 5 in 60s", 8, "expected '>=' after the event, not '>'"},
           Case{"denied >=", 10, "expected a count after '>='"},
           Case{"denied >= 0 in 60s", 11, "the count must be at least 1, not 0"},
           Case{"denied >= -3 in 60s", 11, "expected a count"},
           Case{"denied >= 2.5 in 60s", 11, "expected a count"},
           Case{"denied >= 10001 in 60s", 11, "at most 10000"},
           Case{"denied >= 99999999999999999999999 in 60s", 11, "at most 10000"},
           Case{"denied >= 5 60s", 13, "expected 'in'"},
           Case{"denied >= 5", 12, "expected 'in'"},
           Case{"denied >= 5 in", 15, "expected a window after 'in'"},
           Case{"denied >= 5 in 60x", 16, "'60x' is not a duration"},
           Case{"denied >= 5 in 0s", 16, "the window must be longer than 0"},
           Case{"denied >= 5 in 60s or more", 20, "unexpected 'or' after the window"},
       }) {
    const auto e = trigger_error(c.text);
    EXPECT_EQ(e.column, c.column) << c.text << ": " << e.message;
    EXPECT_NE(e.message.find(c.fragment), std::string::npos) << c.text << ": " << e.message;
  }
}

TEST(Guardian, TheIssuesExampleLoads) {
  const Policy p = parse_policy(R"({"version": 1, "guardian": {
      "rules": [{"on": ["denied >= 20 in 60s", "budget_exhausted", "exfiltration_attempt", "secret_in_request",
                        "internal_probe >= 5 in 60s"], "action": "kill"},
                {"on": ["rate_limited >= 100 in 10m"], "action": "freeze"},
                {"on": ["encoded_label"], "action": "report"}],
      "webhook": "http://127.0.0.1:9000/hook",
      "content": {"secrets": "report", "body_window": "128K", "encoded_labels": "off"}}})",
                                "p.json");
  const GuardianSettings& g = p.base.guardian;
  ASSERT_EQ(g.rules.size(), 3U);
  EXPECT_EQ(g.rules[0].action, GuardianAction::kill);
  ASSERT_EQ(g.rules[0].on.size(), 5U);
  EXPECT_EQ(g.rules[0].on[0], trigger("denied >= 20 in 60s"));
  EXPECT_EQ(g.rules[0].on[4].event, GuardianEvent::internal_probe);
  EXPECT_EQ(g.rules[0].on[4].threshold, 5U);
  EXPECT_EQ(g.rules[1].action, GuardianAction::freeze);
  EXPECT_EQ(g.rules[1].on[0].window, 10min);
  EXPECT_EQ(g.rules[2].action, GuardianAction::report);
  EXPECT_EQ(g.rules[1].cite(), "guardian.rules[1] rate_limited >= 100 in 10m -> freeze");
  EXPECT_EQ(g.webhook, "http://127.0.0.1:9000/hook");
  EXPECT_EQ(g.content, (ContentRules{ContentMode::report, 128 * 1024, ContentMode::off}));
}

TEST(Guardian, DefaultsWhenAbsent) {
  const GuardianSettings& g = default_policy().base.guardian;
  EXPECT_TRUE(g.rules.empty());
  EXPECT_FALSE(g.webhook);
  EXPECT_EQ(g.content, (ContentRules{ContentMode::enforce, 64 * 1024, ContentMode::enforce}));
}

// An agent's guardian replaces rules and webhook whole and merges content key by key, so a
// team can measure one content rule (report) for one agent and keep the rest.
TEST(Guardian, AgentsMergeKeyByKey) {
  const Policy p = parse_policy(R"({"version": 1,
    "guardian": {"rules": [{"on": ["denied >= 20 in 60s"], "action": "kill"}], "webhook": "https://hooks.example/n",
                 "content": {"secrets": "report", "body_window": "16K"}},
    "agents": {"trial": {"guardian": {"content": {"encoded_labels": "report"}}},
               "strict": {"guardian": {"rules": [{"on": ["denied"], "action": "freeze"}],
                                       "content": {"secrets": "enforce"}}}}})",
                                "p.json");
  const GuardianSettings& trial = p.profile_for("trial").guardian;
  EXPECT_EQ(trial.rules.size(), 1U);
  EXPECT_EQ(trial.webhook, "https://hooks.example/n");
  EXPECT_EQ(trial.content, (ContentRules{ContentMode::report, 16 * 1024, ContentMode::report}));
  const GuardianSettings& strict = p.profile_for("strict").guardian;
  ASSERT_EQ(strict.rules.size(), 1U);
  EXPECT_EQ(strict.rules[0].cite(), "agents.strict.guardian.rules[0] denied -> freeze");
  EXPECT_EQ(strict.content, (ContentRules{ContentMode::enforce, 16 * 1024, ContentMode::enforce}));
  EXPECT_EQ(p.profile_for("strict").overrides, (std::vector<std::string>{"guardian"}));
}

TEST(Guardian, ATriggerMistakeNamesTheRuleTheTextAndTheColumn) {
  const PolicyError e = error_of("{\n  \"version\": 1,\n  \"guardian\": {\"rules\": [\n"
                                 "    {\"on\": [\"budget_exhausted\", \"denied >= 0 in 60s\"], \"action\": \"kill\"}]}\n}\n");
  EXPECT_EQ(std::string(e.what()),
            "p.json:4:33: /guardian/rules/0/on/1: guardian.rules[0] trigger \"denied >= 0 in 60s\", column 11: the count "
            "must be at least 1, not 0");
  expect_fail(with_guardian(R"({"rules": [{"on": ["budget_exhaused"], "action": "kill"}]})"), "/guardian/rules/0/on/0",
              "unknown event 'budget_exhaused'; did you mean 'budget_exhausted'?");
  expect_fail(R"({"version": 1, "agents": {"a": {"guardian": {"rules": [{"on": ["denied >= 5 in"], "action": "kill"}]}}}})",
              "/agents/a/guardian/rules/0/on/0", "agents.a.guardian.rules[0] trigger \"denied >= 5 in\", column 15");
}

TEST(Guardian, RuleMistakesAreNamed) {
  expect_fail(with_guardian(R"({"rules": [{"on": ["denied"], "action": "kil"}]})"), "/guardian/rules/0/action",
              "unknown action \"kil\"; did you mean 'kill'? (kill, freeze or report)");
  expect_fail(with_guardian(R"({"rules": [{"on": ["denied"], "action": "shutdown"}]})"), "/guardian/rules/0/action",
              "unknown action \"shutdown\"");
  expect_fail(with_guardian(R"({"rules": [{"on": ["denied"]}]})"), "/guardian/rules/0", "needs \"action\"");
  expect_fail(with_guardian(R"({"rules": [{"action": "kill"}]})"), "/guardian/rules/0", "needs \"on\"");
  expect_fail(with_guardian(R"({"rules": [{"on": [], "action": "kill"}]})"), "/guardian/rules/0/on", "has no trigger");
  expect_fail(with_guardian(R"({"rules": [{"on": "denied", "action": "kill"}]})"), "/guardian/rules/0/on",
              "must be an array");
  expect_fail(with_guardian(R"({"rules": [{"on": [20], "action": "kill"}]})"), "/guardian/rules/0/on/0",
              "must be a string");
  expect_fail(with_guardian(R"({"rules": [{"on": ["denied"], "action": "kill", "then": "x"}]})"),
              "/guardian/rules/0/then", "unknown key 'then'");
  expect_fail(with_guardian(R"({"rule": []})"), "/guardian/rule", "did you mean 'rules'?");
  expect_fail(with_guardian(R"([])"), "/guardian", "must be an object");
}

TEST(Guardian, TheWebhookMustBeHttpOrHttps) {
  for (const char* bad : {"ftp://127.0.0.1/hook", "file:///tmp/hook", "127.0.0.1:9000/hook", "javascript:alert(1)",
                          "gopher://127.0.0.1:70/"})
    expect_fail(with_guardian(std::string(R"({"webhook": ")") + bad + "\"}"), "/guardian/webhook",
                "must be an http:// or https:// URL");
  expect_fail(with_guardian(R"({"webhook": "http://"})"), "/guardian/webhook", "names no host");
  expect_fail(with_guardian(R"({"webhook": "http://:9000/hook"})"), "/guardian/webhook", "names no host");
  expect_fail(with_guardian(R"({"webhook": "http://user:pw@127.0.0.1/hook"})"), "/guardian/webhook",
              "must not carry a user or password");
  expect_fail(with_guardian(R"({"webhook": "http://127.0.0.1/ho ok"})"), "/guardian/webhook", "spaces");
  expect_fail(with_guardian(R"({"webhook": 9000})"), "/guardian/webhook", "must be a string");
  EXPECT_EQ(parse_policy(with_guardian(R"({"webhook": "HTTPS://[::1]:9443/h?x=1"})"), "p").base.guardian.webhook,
            "HTTPS://[::1]:9443/h?x=1");
}

TEST(Guardian, ContentRuleMistakesAreNamed) {
  expect_fail(with_guardian(R"({"content": {"secret": "report"}})"), "/guardian/content/secret",
              "unknown key 'secret'; did you mean 'secrets'?");
  expect_fail(with_guardian(R"({"content": {"jwt": "report"}})"), "/guardian/content/jwt", "unknown key 'jwt'");
  expect_fail(with_guardian(R"({"content": {"secrets": "enforced"}})"), "/guardian/content/secrets",
              "unknown mode \"enforced\"; did you mean 'enforce'? (enforce, report or off)");
  expect_fail(with_guardian(R"({"content": {"encoded_labels": true}})"), "/guardian/content/encoded_labels",
              "must be a string");
  expect_fail(with_guardian(R"({"content": {"body_window": 0}})"), "/guardian/content/body_window", "at least 1 byte");
  expect_fail(with_guardian(R"({"content": {"body_window": "-1K"}})"), "/guardian/content/body_window",
              "must not be negative");
  expect_fail(with_guardian(R"({"content": {"body_window": "2M"}})"), "/guardian/content/body_window", "at most 1M");
  expect_fail(with_guardian(R"({"content": {"body_window": "64Q"}})"), "/guardian/content/body_window",
              "must be a size");
  EXPECT_EQ(parse_policy(with_guardian(R"({"content": {"body_window": "1M"}})"), "p").base.guardian.content.body_window,
            kMaxContentWindow);
}

// Every mistake of a guardian section is reported in one run, in file order.
TEST(Guardian, EveryMistakeAtOnce) {
  const PolicyError e = error_of(with_guardian(
      R"({"rules": [{"on": ["denied >= 0 in 1s"], "action": "stop"}], "webhook": "ftp://x", "content": {"secrets": "x"}})"));
  EXPECT_EQ(e.problems().size(), 4U) << e.what();
}

TEST(Guardian, SummaryAndExplainShowIt) {
  const Policy p = parse_policy(
      with_guardian(R"({"rules": [{"on": ["denied >= 20 in 60s"], "action": "kill"}], "webhook": "http://127.0.0.1:9000/hook"})"),
      "p.json");
  const std::string s = summarize(p);
  EXPECT_NE(s.find("  guardian:       guardian.rules[0] denied >= 20 in 60s -> kill\n"
                   "                  webhook http://127.0.0.1:9000/hook\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("content:"), std::string::npos) << s;  // at its defaults: only --explain shows it
  EXPECT_NE(explain_profiles(p).find("content: secrets enforce"), std::string::npos);
}
