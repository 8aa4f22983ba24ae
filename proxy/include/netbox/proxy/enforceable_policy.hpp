#pragma once
// What this proxy can enforce: `inspect` needs a CA (--ca-dir); a policy it cannot apply
// whole is refused at start and on reload, so a reviewed file is never silently half
// applied.
#include "netbox/policy/policy.hpp"

namespace netbox::proxy {

// Throws policy::PolicyError naming the file, the profile and the key.
// `can_inspect`: the proxy has a CA loaded (--ca-dir).
void check_enforceable(const policy::Policy& p, bool can_inspect);

}  // namespace netbox::proxy
