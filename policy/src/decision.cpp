#include "netbox/policy/decision.hpp"

namespace netbox::policy {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::allow: return "allow";
    case Verdict::deny: return "deny";
    case Verdict::report: return "report";
  }
  return "deny";
}

}  // namespace netbox::policy
