#include "agent_registry.hpp"

namespace netbox::proxy {

boost::asio::ip::address canonical_address(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  return a;
}

AgentRegistry::AgentRegistry() : map_(std::make_shared<const Map>()) {}

AgentIdentity AgentRegistry::lookup(const boost::asio::ip::address& addr) const {
  return find(addr).value_or(AgentIdentity{});
}

std::optional<AgentIdentity> AgentRegistry::find(const boost::asio::ip::address& addr) const {
  const auto snap = map_.load();
  auto it = snap->find(canonical_address(addr));
  if (it == snap->end()) return std::nullopt;
  return it->second;
}

void AgentRegistry::add(const boost::asio::ip::address& addr, AgentIdentity who) {
  std::lock_guard lock(write_mu_);
  auto next = std::make_shared<Map>(*map_.load());
  (*next)[canonical_address(addr)] = std::move(who);
  map_.store(std::move(next));
}

std::string AgentRegistry::profiles_missing_from(const policy::Policy& p) const {
  std::string out;
  for (const auto& [addr, who] : *map_.load()) {
    if (who.profile.empty() || p.agents.contains(who.profile)) continue;
    out += (out.empty() ? "" : "; ") + std::string("agent ") + who.agent + " (" + addr.to_string() +
           ") uses profile " + who.profile + ", which the new policy has no agents." + who.profile + " entry for";
  }
  return out;
}

bool AgentRegistry::remove(const boost::asio::ip::address& addr) {
  std::lock_guard lock(write_mu_);
  auto next = std::make_shared<Map>(*map_.load());
  const bool found = next->erase(canonical_address(addr)) > 0;
  map_.store(std::move(next));
  return found;
}

}  // namespace netbox::proxy
