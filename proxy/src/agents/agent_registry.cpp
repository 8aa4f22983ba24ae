#include "agents/agent_registry.hpp"

#include <sys/socket.h>
#include <unistd.h>

namespace netbox::proxy {

boost::asio::ip::address canonical_address(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  return a;
}

boost::asio::ip::address netns_key(std::uint64_t cookie) {
  boost::asio::ip::address_v6::bytes_type b{0xfd, 0x00, 0x6e, 0x62, 0x6e, 0x73};
  for (int i = 0; i < 8; ++i) b[15 - i] = static_cast<unsigned char>(cookie >> (8 * i));
  return boost::asio::ip::address_v6(b);
}

namespace {
boost::asio::ip::tcp::endpoint canonical_endpoint(const boost::asio::ip::tcp::endpoint& ep) {
  return {canonical_address(ep.address()), ep.port()};
}
}  // namespace

std::uint64_t netns_cookie(int fd) {
  std::uint64_t cookie = 0;
  socklen_t len = sizeof cookie;
  if (::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) != 0) return 0;
  return cookie;
}

namespace {
std::uint64_t own_netns_cookie() {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const std::uint64_t cookie = fd < 0 ? 0 : netns_cookie(fd);
  if (fd >= 0) ::close(fd);
  return cookie;
}
}  // namespace

AgentRegistry::AgentRegistry()
    : own_netns_(own_netns_cookie()), map_(std::make_shared<const Map>()), links_(std::make_shared<const Links>()) {}

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
                                                     const boost::asio::ip::address& peer,
                                                     std::uint64_t netns) const {
  // A socket in another namespace than the proxy's is an agent's (the launcher made it
  // there; only that namespace reaches it): that agent's, or nobody's once it has left.
  if (netns != 0 && netns != own_netns_) return find(netns_key(netns));
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

std::size_t AgentRegistry::attached() const {
  std::set<boost::asio::ip::address> agents;
  for (const auto& [addr, who] : *map_.load()) agents.insert(who.slot_address(addr));
  return agents.size();
}

}  // namespace netbox::proxy
