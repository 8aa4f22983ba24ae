#include "netbox/proxy/enforceable_policy.hpp"

#include "netbox/policy/load.hpp"

namespace netbox::proxy {
namespace {

// `name` empty: the top level; otherwise the agent profile's name.
void check_profile(const policy::Profile& profile, const std::string& source, const std::string& name,
                   bool can_inspect) {
  const auto refuse = [&](const char* key, const std::string& why) {
    const std::string pointer = (name.empty() ? "" : "/agents/" + name) + "/" + key;
    const std::string written = (name.empty() ? "" : "agents." + name + ".") + key;
    throw policy::PolicyError(source, 0, 0, pointer, written + ": " + why);
  };
  // `rules`, `inspect` and `credentials` are enforced; `inspect` needs the CA to mint
  // leaves from (and a credential's hosts are inspected ones).
  if (!profile.inspect.empty() && !can_inspect)
    refuse("inspect", "TLS inspection needs the netbox CA: give --ca-dir DIR (`netbox ca init` makes one); the "
                      "policy is refused rather than applied in part");
}

}  // namespace

void check_enforceable(const policy::Policy& p, bool can_inspect) {
  check_profile(p.base, p.source, "", can_inspect);
  for (const auto& [name, profile] : p.agents) check_profile(profile, p.source, name, can_inspect);
}

}  // namespace netbox::proxy
