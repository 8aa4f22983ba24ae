#pragma once
// Destinations that are netbox itself, never a destination of a request through the proxy
// whatever the policy allows (rule `netbox`, in every mode): its proxy listeners and admin
// endpoint, the unspecified addresses (which the kernel connects to this host), and the
// launcher's subnet pool (every launch's host-side veth address, where other launches'
// embedded proxies and any host service bound to 0.0.0.0 answer). An agent whose policy
// lists 127.0.0.1 or 10.0.0.0/8 under internal.allow must still not read the audit API,
// scrape metrics, loop the proxy into itself or borrow another agent's proxy.
#include "netbox/policy/cidr.hpp"

#include "snapshot.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <vector>

namespace netbox::proxy {

class OwnEndpoints {
 public:
  void add(const boost::asio::ip::tcp::endpoint& ep);
  void remove(const boost::asio::ip::tcp::endpoint& ep);
  // The launcher's subnet pools: every address in them, on every port, is netbox's.
  void set_networks(std::vector<policy::Cidr> networks);
  // True if a connection to addr:port would land on netbox. A listener on a wildcard
  // address (0.0.0.0, ::) is reached through loopback and every local interface address.
  bool contains(const boost::asio::ip::address& addr, unsigned short port) const { return !refusal(addr, port).empty(); }
  // Why addr:port is netbox's (the reason a refusal gives), or empty when it is not.
  std::string refusal(const boost::asio::ip::address& addr, unsigned short port) const;

 private:
  struct State {
    std::vector<boost::asio::ip::tcp::endpoint> endpoints;
    std::vector<boost::asio::ip::address> local_addresses;  // read when a wildcard is added
    std::vector<policy::Cidr> networks;
  };
  mutable std::mutex write_mu_;  // add/remove are rare; readers only load the snapshot
  Snapshot<State> state_{std::make_shared<const State>()};
};

// 0.0.0.0/8, ::, and their IPv4-mapped and IPv4-compatible spellings: Linux connects a
// socket to 0.0.0.0 (or ::) through loopback, so these are this host whatever the port.
bool is_unspecified_destination(const boost::asio::ip::address& addr);

}  // namespace netbox::proxy
