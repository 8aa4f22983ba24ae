#include "netbox/policy/policy.hpp"

namespace netbox::policy {

std::string Rule::cite() const {
  return list + "[" + std::to_string(index) + "] " + written;
}

const Profile& Policy::profile_for(const std::string& agent) const {
  auto it = agents.find(agent);
  return it == agents.end() ? base : it->second;
}

}  // namespace netbox::policy
