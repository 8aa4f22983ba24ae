#pragma once
// How a content rule (guardian.content, guardian_rules.hpp) acts for one profile: the
// policy's word, so that the proxy derives no verdict of its own from a profile's mode.
#include "netbox/policy/guardian_rules.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::policy {

// The rule's own mode, but `report` for an enforced rule while the profile is in report
// mode (learning refuses nothing).
ContentMode content_mode(const Profile& profile, ContentMode rule);

}  // namespace netbox::policy
