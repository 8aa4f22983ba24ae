#pragma once
// The values of `requests.decision`, as stored, filtered on (`netbox audit --decision`) and
// labelled in the metrics. The proxy's Outcome (proxy/src/pipeline/outcome.hpp) spells itself with
// these, in this order, so the wire header, the row and the metric never disagree.
#include <array>
#include <string_view>

namespace netbox::audit {

inline constexpr std::array<std::string_view, 6> kDecisions{
    "allow",   // forwarded (or tunnelled) and completed
    "report",  // report mode let it through; the policy would have refused it
    "deny",    // refused by the policy (or because the destination is netbox itself)
    "cap",     // refused because a connection limit was reached (429)
    "error",   // not completed by netbox: a malformed request, a DNS or upstream failure
    "budget",  // refused or cut because a byte budget of the launch is spent (403)
};

inline constexpr bool is_decision(std::string_view s) {
  for (auto d : kDecisions)
    if (d == s) return true;
  return false;
}

}  // namespace netbox::audit
