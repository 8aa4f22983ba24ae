#pragma once
// The policy's `guardian` section (issue 25): rules that watch an agent over time ("denied
// >= 20 in 60s" -> kill), the webhook that hears of every trigger, and the content rules'
// settings. Values only, checked when the policy loads; the proxy acts on them (AgentGuard,
// Guardians, content_rules). A trigger's threshold and window are what
// netbox::guardian::EventWindow takes.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace netbox::policy {

// The closed set of events a trigger may count (docs/policy.md, Guardian).
enum class GuardianEvent {
  denied,                // a request or connection refused by the policy (any rule)
  rate_limited,          // a request answered 429 by a rate
  budget_exhausted,      // a byte budget reached (the agent's or a destination's)
  internal_probe,        // a destination refused as internal (rule `internal`)
  exfiltration_attempt,  // a credential's placeholder sent where it does not belong
  secret_in_request,     // a known secret format found in a request (content rules)
  encoded_label,         // a host name label that looks like encoded data (content rules)
};
std::string_view to_string(GuardianEvent e);
// Every event name, in the order above (for messages and docs).
std::span<const std::string_view> guardian_event_names();

enum class GuardianAction { kill, freeze, report };
std::string_view to_string(GuardianAction a);

// One trigger: EVENT, or EVENT >= N in DURATION. A bare EVENT fires on every such event
// (threshold 1, window 0: EventWindow's "however far apart").
struct GuardianTrigger {
  GuardianEvent event = GuardianEvent::denied;
  std::size_t threshold = 1;             // N: 1..kMaxTriggerThreshold
  std::chrono::milliseconds window{0};   // 0 only for a bare EVENT
  std::string written;                   // as in the file
  bool operator==(const GuardianTrigger&) const = default;
};

// EventWindow keeps the last N event times per agent and trigger: N is bounded.
inline constexpr std::size_t kMaxTriggerThreshold = 10000;

// Why a trigger's text is not one: `column` is 1-based, inside the trigger's text.
struct TriggerError {
  std::size_t column = 1;
  std::string message;
};

//   TRIGGER  := EVENT | EVENT SP ">=" SP N SP "in" SP DURATION
//   EVENT    := one of guardian_event_names()
//   N        := 1..10000 (decimal digits)
//   DURATION := the one grammar of netbox/policy/duration.hpp ("60s", "5m", "1h30m"), > 0
// SP is one or more spaces; nothing before or after.
std::variant<GuardianTrigger, TriggerError> parse_guardian_trigger(std::string_view text);

struct GuardianRule {
  std::vector<GuardianTrigger> on;  // any one firing fires the rule
  GuardianAction action = GuardianAction::report;
  std::string list;                 // "guardian.rules" or "agents.NAME.guardian.rules"
  std::size_t index = 0;
  std::string cite() const;         // "guardian.rules[0] denied >= 20 in 60s, budget_exhausted -> kill"
};

// What a content rule does with what it finds: refuse (and record), record only, or not look.
enum class ContentMode { enforce, report, off };
std::string_view to_string(ContentMode m);

// The largest body_window: what content::find_secret looks at in one text.
inline constexpr std::uint64_t kMaxContentWindow = 1024 * 1024;

struct ContentRules {
  ContentMode secrets = ContentMode::enforce;         // content/secret_formats.hpp find_secret
  std::uint64_t body_window = 64 * 1024;              // bytes of a body searched
  ContentMode encoded_labels = ContentMode::enforce;  // content/secret_formats.hpp encoded_label
  bool operator==(const ContentRules&) const = default;
};

struct GuardianSettings {
  std::vector<GuardianRule> rules;
  std::optional<std::string> webhook;  // an http:// or https:// URL
  // An https:// webhook's trust: a PEM file of the CAs its certificate must chain to
  // (checked at load); none: the system's roots. The host name is verified either way.
  std::optional<std::string> webhook_ca;
  ContentRules content;
};

}  // namespace netbox::policy
