#include "own_endpoints.hpp"

#include "agent_registry.hpp"
#include "target.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>

namespace netbox::proxy {

namespace asio = boost::asio;

namespace {

std::vector<asio::ip::address> interface_addresses() {
  std::vector<asio::ip::address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      out.emplace_back(asio::ip::address_v4(ntohl(sin->sin_addr.s_addr)));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      asio::ip::address_v6::bytes_type b;
      std::copy(std::begin(sin6->sin6_addr.s6_addr), std::end(sin6->sin6_addr.s6_addr), b.begin());
      out.emplace_back(asio::ip::address_v6(b));
    }
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

void OwnEndpoints::add(const asio::ip::tcp::endpoint& ep) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  next->endpoints.push_back(ep);
  if (ep.address().is_unspecified()) next->local_addresses = interface_addresses();
  state_.store(std::move(next));
}

void OwnEndpoints::remove(const asio::ip::tcp::endpoint& ep) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  auto& v = next->endpoints;
  if (auto it = std::find(v.begin(), v.end(), ep); it != v.end()) v.erase(it);
  state_.store(std::move(next));
}

void OwnEndpoints::set_networks(std::vector<policy::Cidr> networks) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  next->networks = std::move(networks);
  state_.store(std::move(next));
}

bool is_unspecified_destination(const asio::ip::address& addr) {
  const auto a = canonical_address(addr);
  if (a.is_v4()) return (a.to_v4().to_uint() >> 24) == 0;  // 0.0.0.0/8
  // ::/96 (IPv4-compatible, deprecated) holds :: and ::0.x.y.z.
  const auto b = a.to_v6().to_bytes();
  for (std::size_t i = 0; i < 13; ++i)
    if (b[i] != 0) return false;
  return true;
}

std::string OwnEndpoints::refusal(const asio::ip::address& addr, unsigned short port) const {
  // ::ffff:127.0.0.1 is 127.0.0.1 to the kernel, so compare canonical forms.
  const auto a = canonical_address(addr);
  const auto where = [&] { return authority(a.to_string(), port); };
  if (is_unspecified_destination(a))
    return where() + " is an unspecified address, which reaches this host (and netbox's own endpoints) "
                     "through loopback; no request through the proxy may use it";
  const auto state = state_.load();
  for (const auto& net : state->networks)
    if (net.contains(a))
      return where() + " is in netbox's launch subnet " + net.to_string() +
             " (the host side of agents' links and their proxies), which no request through the proxy may reach";
  for (const auto& ep : state->endpoints) {
    if (ep.port() != port) continue;
    const auto mine = canonical_address(ep.address());
    bool hit = mine == a;
    if (!hit && mine.is_unspecified()) {
      hit = a.is_loopback();
      for (const auto& local : state->local_addresses) hit = hit || canonical_address(local) == a;
    }
    if (hit) return where() + " is netbox's own proxy or admin endpoint, which no request through the proxy may reach";
  }
  return {};
}

}  // namespace netbox::proxy
