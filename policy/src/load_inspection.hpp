#pragma once
// Reading the TLS-inspection keys of a profile: `inspect` (host entries, the grammar of
// `allow`), `rules` (method and path rules per host) and `credentials` (secrets the
// proxy adds to inspected requests), and checking them against the rest of the profile
// once every key is read.
#include "load_context.hpp"
#include "netbox/policy/policy.hpp"

namespace netbox::policy::detail {

// A host entry as `allow` writes it (exact or *.suffix, optionally :port), never an address
// or network: rules, credentials and limits.destinations apply to what a request names.
Rule host_entry(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer);

std::vector<RequestRule> read_request_rules(const LoadContext& ctx, const nlohmann::json& j,
                                            const std::string& pointer, const std::string& list_name);
std::vector<Credential> read_credentials(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer);

// A rule for a host the profile does not allow could never apply (and says the author
// misread the policy); a credential for a host that is not inspected would never be
// added. Both are mistakes, reported at `pointer` (the profile's own object).
void check_inspection(const LoadContext& ctx, const Profile& profile, const std::string& pointer);

}  // namespace netbox::policy::detail
