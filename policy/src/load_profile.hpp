#pragma once
// Reading the keys a profile is made of (top level or agents.NAME).
#include "load_context.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::policy::detail {

// Reads those of allow, deny, ports, internal, limits, mode, sandbox, ..., guardian that `object` has
// into `profile`, replacing what was there (limits, sandbox and guardian merge key by key). `list_prefix` is
// "" for the top level and "agents.NAME." for an agent; rules cite it.
void read_profile_keys(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                       const std::string& list_prefix, Profile& profile);

}  // namespace netbox::policy::detail
