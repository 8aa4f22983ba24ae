#include "netbox/proxy/enforceable_policy.hpp"

#include "netbox/policy/load.hpp"

namespace netbox::proxy {
namespace {

// `name` empty: the top level; otherwise the agent profile's name.
void check_profile(const policy::Profile& profile, const std::string& source, const std::string& name) {
  // `rules` are enforced (plain HTTP; a CONNECT to a host they name is refused unless inspected).
  const char* key = !profile.inspect.empty()       ? "inspect"
                    : !profile.credentials.empty() ? "credentials"
                                                   : nullptr;
  if (!key) return;
  const std::string pointer = (name.empty() ? "" : "/agents/" + name) + "/" + key;
  const std::string written = (name.empty() ? "" : "agents." + name + ".") + key;
  throw policy::PolicyError(source, 0, 0, pointer,
                            written + ": TLS inspection (inspect, credentials) is not enforced by this build "
                                      "of the proxy yet; the policy is refused rather than applied in part (see "
                                      "docs/inspection.md)");
}

}  // namespace

void check_enforceable(const policy::Policy& p) {
  check_profile(p.base, p.source, "");
  for (const auto& [name, profile] : p.agents) check_profile(profile, p.source, name);
}

}  // namespace netbox::proxy
