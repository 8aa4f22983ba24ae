#pragma once
// The one value every policy question is answered with. Made by `policy` only;
// the proxy logs it and acts on it, it never re-derives a verdict.
#include <string>
#include <string_view>
#include <utility>

namespace netbox::policy {

enum class Verdict {
  allow,   // let through
  deny,    // refuse
  report,  // would be denied, but the profile is in "report" mode: let through and log
};

std::string_view to_string(Verdict v);

struct Decision {
  Verdict verdict = Verdict::deny;
  // The rule that matched, as written in the file with its list and index,
  // e.g. "deny[0] *.evil.example", "ports", "internal". Empty when no rule matched.
  std::string rule;
  // A sentence a person or a language model can act on, e.g.
  // "port 22 is not in ports [80, 443]".
  std::string reason;

  bool lets_through() const { return verdict != Verdict::deny; }
  // Let through with nothing to report: no row needs to explain it.
  bool plain_allow() const { return verdict == Verdict::allow; }

  // A refusal the policy's callers may pass on as it is (a name the DNS view cannot
  // answer, a credential's placeholder): every mode refuses it.
  static Decision refused(std::string rule, std::string reason) {
    return Decision{Verdict::deny, std::move(rule), std::move(reason)};
  }
};

}  // namespace netbox::policy
