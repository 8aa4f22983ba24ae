#pragma once
// How a request ended, in one vocabulary: the X-Netbox-Decision header of a refusal, the
// audit row's `decision` and the `decision` label of netbox_requests_total are all
// to_string(outcome).
#include "netbox/audit/decision.hpp"
#include "netbox/policy/decision.hpp"

#include <cstddef>
#include <string_view>

namespace netbox::proxy {

enum class Outcome {
  allow,   // admitted and completed
  report,  // admitted in report mode: the policy would have refused it
  deny,    // refused by the policy or because the destination is netbox
  cap,     // refused by a connection limit
  error,   // malformed request, DNS or upstream failure, audit store refusing
  budget,  // a byte budget is spent: refused (403), or the relay cut at the budget
};

constexpr std::string_view to_string(Outcome o) { return audit::kDecisions[static_cast<std::size_t>(o)]; }

constexpr Outcome outcome_of(policy::Verdict v) {
  switch (v) {
    case policy::Verdict::allow: return Outcome::allow;
    case policy::Verdict::report: return Outcome::report;
    case policy::Verdict::deny: return Outcome::deny;
  }
  return Outcome::deny;
}

// The one place in proxy/ that names a verdict's Outcome (allow, report, deny): everywhere
// else an outcome comes from the policy's Decision (outcome_of) or is one of netbox's own
// facts (cap, error, budget), and is read through these (docs.proxy_derives_no_verdict).

// The policy refused it (a deny): as against a limit, a budget or a failure.
constexpr bool refused_by_policy(Outcome o) { return o == Outcome::deny; }
// Let through with nothing to say: not refused, not reported, nothing failed.
constexpr bool plainly_allowed(Outcome o) { return o == Outcome::allow; }
// A row's outcome until admission's decision, a refusal or a failure replaces it.
inline constexpr Outcome kNotRefused = Outcome::allow;

static_assert(to_string(Outcome::allow) == "allow" && to_string(Outcome::report) == "report" &&
                  to_string(Outcome::deny) == "deny" && to_string(Outcome::cap) == "cap" &&
                  to_string(Outcome::error) == "error" && to_string(Outcome::budget) == "budget",
              "Outcome's order is audit::kDecisions'");

}  // namespace netbox::proxy
