#include "netbox/proxy/agent_name.hpp"

#include "netbox/audit/printable.hpp"

namespace netbox::proxy {

std::string agent_name_problem(std::string_view name) {
  if (name.empty()) return "is missing or empty; every registered agent needs a name";
  if (name == "anonymous") return "'anonymous' is reserved for clients without an agent identity";
  if (audit::needs_escaping(name))
    return "'" + audit::escape_controls(name) + "' contains control characters or bytes that are not UTF-8";
  return {};
}

}  // namespace netbox::proxy
