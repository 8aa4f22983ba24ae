#pragma once
// The one value every policy question is answered with. Made by `policy` only;
// the proxy logs it and acts on it, it never re-derives a verdict.
#include <string>
#include <string_view>

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
};

}  // namespace netbox::policy
