#pragma once
// The policy's `sandbox` settings under `netbox launch --policy`: a flag given on the
// command line wins, then the agent profile's sandbox, then the top level's (the loader
// has already merged those two), then the launcher's defaults.
#include "netbox/launcher/launch_options.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::launcher {

// `flags` with each setting it leaves unset taken from `sandbox`.
LaunchOptions with_policy_sandbox(LaunchOptions flags, const policy::SandboxSettings& sandbox);

}  // namespace netbox::launcher
