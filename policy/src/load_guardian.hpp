#pragma once
// Reading the `guardian` section (top level or agents.NAME.guardian): rules, webhook and
// content rules' settings.
#include "load_context.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::policy::detail {

// Replaces in `settings` the keys `object` names (rules and webhook whole, content key by
// key); the others stay, so an agent's entry starts from the top level's. `list_prefix` is
// "" or "agents.NAME."; rules cite it.
void read_guardian(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                   const std::string& list_prefix, GuardianSettings& settings);

}  // namespace netbox::policy::detail
