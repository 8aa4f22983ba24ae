#include "base/own_endpoints.hpp"

#include "agents/agent_registry.hpp"
#include "pipeline/target.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>

namespace netbox::proxy {

namespace asio = boost::asio;

namespace {

bool is_loopback(const asio::ip::address& a) { return a.is_loopback(); }  // 127.0.0.0/8 or ::1

}  // namespace

std::vector<asio::ip::address> host_interface_addresses() {
  std::vector<asio::ip::address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    asio::ip::address a;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      a = asio::ip::address_v4(ntohl(sin->sin_addr.s_addr));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      asio::ip::address_v6::bytes_type b;
      std::copy(std::begin(sin6->sin6_addr.s6_addr), std::end(sin6->sin6_addr.s6_addr), b.begin());
      a = asio::ip::address_v6(b);  // without scope: a request target names none either
    } else {
      continue;
    }
    a = destination_form(a);
    if (!is_loopback(a) && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

asio::ip::address destination_form(const asio::ip::address& addr) {
  const auto a = canonical_address(addr);  // folds ::ffff:a.b.c.d
  if (a.is_v4()) return a;
  const auto b = a.to_v6().to_bytes();
  for (std::size_t i = 0; i < 12; ++i)
    if (b[i] != 0) return a;
  if (b[12] == 0) return a;  // ::, ::1 and ::0.x.y.z are not IPv4-compatible spellings of a host
  return asio::ip::address_v4(asio::ip::address_v4::bytes_type{b[12], b[13], b[14], b[15]});
}

bool is_unspecified_destination(const asio::ip::address& addr) {
  const auto a = destination_form(addr);
  if (a.is_v4()) return (a.to_v4().to_uint() >> 24) == 0;  // 0.0.0.0/8
  if (a.is_loopback()) return false;                        // ::1
  // What destination_form left in ::/96 is :: and ::0.x.y.z (IPv4-compatible 0.0.0.0/8).
  const auto b = a.to_v6().to_bytes();
  for (std::size_t i = 0; i < 13; ++i)
    if (b[i] != 0) return false;
  return true;
}

void OwnEndpoints::add(const asio::ip::tcp::endpoint& ep) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  next->endpoints.push_back(ep);
  state_.store(std::move(next));
}

void OwnEndpoints::remove(const asio::ip::tcp::endpoint& ep) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  auto& v = next->endpoints;
  if (auto it = std::find(v.begin(), v.end(), ep); it != v.end()) v.erase(it);
  state_.store(std::move(next));
}

std::vector<asio::ip::tcp::endpoint> OwnEndpoints::endpoints() const { return state_.load()->endpoints; }

void OwnEndpoints::set_networks(std::vector<policy::Cidr> networks) {
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  next->networks = std::move(networks);
  state_.store(std::move(next));
}

void OwnEndpoints::set_host(std::vector<asio::ip::address> interface_addresses,
                            std::vector<asio::ip::tcp::endpoint> peers) {
  for (auto& a : interface_addresses) a = destination_form(a);
  std::sort(interface_addresses.begin(), interface_addresses.end());  // searched on every request
  std::lock_guard lk(write_mu_);
  auto next = std::make_shared<State>(*state_.load());
  next->interface_addresses = std::move(interface_addresses);
  next->peers = std::move(peers);
  state_.store(std::move(next));
}

namespace {

// Whether a connection to a:port lands on a listener bound to `ep`. A wildcard listener
// of either family (an IPv6 one takes IPv4 too, unless V6ONLY) answers on loopback; on
// every other local address as well, which the interface check refuses on every port.
bool lands_on(const asio::ip::tcp::endpoint& ep, const asio::ip::address& a, unsigned short port) {
  if (ep.port() != port) return false;
  const auto mine = destination_form(ep.address());
  return mine == a || (mine.is_unspecified() && is_loopback(a));
}

}  // namespace

std::string OwnEndpoints::refusal(const asio::ip::address& addr, unsigned short port) const {
  const auto a = destination_form(addr);
  const auto where = [&] { return authority(a.to_string(), port); };
  if (is_unspecified_destination(a))
    return where() + " is an unspecified address, which reaches this host (and netbox's own endpoints) "
                     "through loopback; no request through the proxy may use it";
  const auto state = state_.load();
  for (const auto& net : state->networks)
    if (net.contains(a))
      return where() + " is in netbox's launch subnet " + net.to_string() +
             " (the host side of agents' links and their proxies), which no request through the proxy may reach";
  if (std::binary_search(state->interface_addresses.begin(), state->interface_addresses.end(), a))
    return where() + " is an address of this host's interfaces, where every host service bound to 0.0.0.0 or :: "
                     "answers; no request through the proxy may reach it";
  for (const auto& ep : state->endpoints)
    if (lands_on(ep, a, port))
      return where() + " is netbox's own proxy or admin endpoint, which no request through the proxy may reach";
  for (const auto& ep : state->peers)
    if (lands_on(ep, a, port))
      return where() + " is another netbox proxy's listener or admin endpoint on this host, which no request "
                       "through the proxy may reach";
  return {};
}

}  // namespace netbox::proxy
