#pragma once
// Reading the `sandbox` key (top level or agents.NAME.sandbox).
#include "load_context.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::policy::detail {

// Replaces in `settings` the keys `object` names; the others stay (an agent's entry
// starts from the top level's).
void read_sandbox(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                  SandboxSettings& settings);

}  // namespace netbox::policy::detail
