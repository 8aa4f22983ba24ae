#pragma once
// `netbox policy check --explain`: each profile's `rules`, grouped by host, with what each
// rule checks in a request's body (jsonrpc, body_schema, git), as text or JSON; and the
// warning that the proxy does not enforce body checks yet.
#include "netbox/policy/policy.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace netbox::cli {

// `agent` empty: the top level and every agent profile with its own `rules`.
void print_rules_listing(std::ostream& out, const policy::Policy& pol, const std::string& agent);
nlohmann::json rules_listing_json(const policy::Policy& pol, const std::string& agent);

}  // namespace netbox::cli
