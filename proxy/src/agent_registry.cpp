#include "agent_registry.hpp"

namespace netbox::proxy {

boost::asio::ip::address canonical_address(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  return a;
}

namespace {
boost::asio::ip::tcp::endpoint canonical_endpoint(const boost::asio::ip::tcp::endpoint& ep) {
  return {canonical_address(ep.address()), ep.port()};
}
}  // namespace

AgentRegistry::AgentRegistry() : map_(std::make_shared<const Map>()), links_(std::make_shared<const Links>()) {}

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

void AgentRegistry::add_link(const boost::asio::ip::tcp::endpoint& local,
                             const std::vector<boost::asio::ip::address>& agent) {
  std::lock_guard lock(write_mu_);
  auto next = std::make_shared<Links>(*links_.load());
  auto& peers = (*next)[canonical_endpoint(local)];
  peers.clear();
  for (const auto& a : agent) peers.insert(canonical_address(a));
  links_.store(std::move(next));
}

void AgentRegistry::remove_link(const boost::asio::ip::tcp::endpoint& local) {
  std::lock_guard lock(write_mu_);
  auto next = std::make_shared<Links>(*links_.load());
  next->erase(canonical_endpoint(local));
  links_.store(std::move(next));
}

std::optional<AgentIdentity> AgentRegistry::identify(const boost::asio::ip::tcp::endpoint& local,
                                                     const boost::asio::ip::address& peer) const {
  const auto links = links_.load();
  auto link = links->find(canonical_endpoint(local));
  if (link == links->end()) return lookup(peer);
  // The agent's own listener: its registered addresses only, and only while registered
  // (a connection racing its unregistration is nobody's, not anonymous).
  if (!link->second.contains(canonical_address(peer))) return std::nullopt;
  return find(peer);
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
