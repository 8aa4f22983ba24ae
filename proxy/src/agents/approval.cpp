// The approval values' spellings (netbox/proxy/approval.hpp), apart from the book that parks
// requests (pipeline/approvals.*): the control protocol parses and writes them, and its
// fuzz target links this file alone.
#include "netbox/proxy/approval.hpp"

namespace netbox::proxy {

std::string_view to_string(AskScope s) {
  return s == AskScope::once ? "once" : s == AskScope::launch ? "launch" : "policy";
}

std::optional<AskScope> parse_ask_scope(std::string_view t) {
  if (t == "once" || t == "o") return AskScope::once;
  if (t == "launch" || t == "l") return AskScope::launch;
  if (t == "policy" || t == "p") return AskScope::policy;
  return std::nullopt;
}

}  // namespace netbox::proxy
