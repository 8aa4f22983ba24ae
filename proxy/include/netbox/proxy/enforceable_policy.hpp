#pragma once
// What this build of the proxy can enforce. The policy library reads keys the proxy does
// not apply yet (TLS inspection's inspect, rules and credentials: issue 16); a policy
// that uses them is refused at start and on reload, so a reviewed file is never silently
// half applied.
#include "netbox/policy/policy.hpp"

namespace netbox::proxy {

// Throws policy::PolicyError naming the file, the profile and the key.
void check_enforceable(const policy::Policy& p);

}  // namespace netbox::proxy
