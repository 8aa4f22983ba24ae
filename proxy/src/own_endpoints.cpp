#include "own_endpoints.hpp"

#include "agent_registry.hpp"

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

bool OwnEndpoints::contains(const asio::ip::address& addr, unsigned short port) const {
  const auto state = state_.load();
  // ::ffff:127.0.0.1 is 127.0.0.1 to the kernel, so compare canonical forms.
  const auto a = canonical_address(addr);
  for (const auto& ep : state->endpoints) {
    if (ep.port() != port) continue;
    const auto mine = canonical_address(ep.address());
    if (mine == a) return true;
    if (!mine.is_unspecified()) continue;
    if (a.is_loopback() || a.is_unspecified()) return true;
    for (const auto& local : state->local_addresses)
      if (canonical_address(local) == a) return true;
  }
  return false;
}

}  // namespace netbox::proxy
