#pragma once
// Step 3, for a request whose host was allowed and whose method and path the proxy can
// see (plain HTTP, or HTTPS it inspects): the profile's `rules`, in order, first match
// wins. A host no rule names is left to the host decision; a host some rule names but
// no rule matches for this request is denied, so a rule list is an allow list per host.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/policy.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace netbox::policy {

// `host` is the normalised name the host decision used, `path` the canonical path
// (normalize_request_path). Report mode turns a deny into a report, as everywhere.
Decision decide_request(const Profile& profile, const std::string& host, uint16_t port, std::string_view method,
                        std::string_view path);

// Whether some entry of the profile's `rules` names this host on this port: then its
// requests must be seen to be decided (plain HTTP, or an inspected CONNECT), and a blind
// tunnel to it is refused.
bool rules_name(const Profile& profile, const std::string& host, uint16_t port);

// Whether the profile inspects this host (its `inspect` list names it on this port).
bool inspects(const Profile& profile, const std::string& host, uint16_t port);

}  // namespace netbox::policy
