#pragma once
// Reading the body keys of one `rules` entry (issue 28): `jsonrpc`, `body_schema`, `git`
// and `body_window`, checked against the rule's method, paths and action, with every
// schema compiled here so that a keyword the checker does not support is refused when the
// policy is loaded, never ignored when a body arrives.
#include "load_context.hpp"
#include "netbox/policy/body_rules.hpp"

#include <memory>

namespace netbox::policy::detail {

// Null when the rule names none of the body keys. `rule` holds the entry's methods,
// paths and action, already read.
std::shared_ptr<const BodyRules> read_body_rules(const LoadContext& ctx, const nlohmann::json& j,
                                                 const std::string& pointer, const RequestRule& rule);

}  // namespace netbox::policy::detail
