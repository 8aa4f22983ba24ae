#pragma once
// Destinations that are netbox itself, never a destination of a request through the proxy
// whatever the policy allows (rule `netbox`, in every mode):
//  - its own proxy listeners and admin endpoint;
//  - every other netbox proxy's listeners and admin endpoint on this host, as they list
//    them in the host-wide registry (endpoint_registry.hpp);
//  - the unspecified addresses (which the kernel connects to this host);
//  - every address of one of this host's interfaces but loopback (a host service bound to
//    0.0.0.0 or :: answers there: the host's eth0 address in a VPC a policy allows);
//  - the launcher's subnet pool (every launch's host-side veth address, where other
//    launches' embedded proxies answer, and the agents' own addresses).
// Loopback (127.0.0.0/8, ::1) stays an ordinary internal address that internal.allow
// governs, except where a netbox endpoint listens on it. An agent whose policy lists
// 127.0.0.1 or 10.0.0.0/8 under internal.allow must still not read the audit API, scrape
// metrics, loop the proxy into itself, borrow another agent's proxy or reach the host.
#include "netbox/policy/cidr.hpp"

#include "base/snapshot.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <vector>

namespace netbox::proxy {

class OwnEndpoints {
 public:
  void add(const boost::asio::ip::tcp::endpoint& ep);
  void remove(const boost::asio::ip::tcp::endpoint& ep);
  std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;
  // The launcher's subnet pools: every address in them, on every port, is netbox's.
  void set_networks(std::vector<policy::Cidr> networks);
  // What changes under a running proxy: the host's interface addresses (loopback left
  // out) and the endpoints other netbox proxies on this host registered.
  void set_host(std::vector<boost::asio::ip::address> interface_addresses,
                std::vector<boost::asio::ip::tcp::endpoint> peers);
  // True if a connection to addr:port would land on netbox or this host. A listener on a
  // wildcard address (0.0.0.0, ::) is reached through loopback and every local address.
  bool contains(const boost::asio::ip::address& addr, unsigned short port) const { return !refusal(addr, port).empty(); }
  // Why addr:port is netbox's (the reason a refusal gives), or empty when it is not.
  std::string refusal(const boost::asio::ip::address& addr, unsigned short port) const;

 private:
  struct State {
    std::vector<boost::asio::ip::tcp::endpoint> endpoints;
    std::vector<boost::asio::ip::address> interface_addresses;  // in destination_form, sorted
    std::vector<boost::asio::ip::tcp::endpoint> peers;
    std::vector<policy::Cidr> networks;
  };
  mutable std::mutex write_mu_;  // writes are rare; readers only load the snapshot
  Snapshot<State> state_{std::make_shared<const State>()};
};

// The addresses of this host's interfaces (getifaddrs), loopback left out.
std::vector<boost::asio::ip::address> host_interface_addresses();

// The address a check compares: an IPv4-mapped address (::ffff:a.b.c.d) is a.b.c.d to the
// kernel, and an IPv4-compatible one (::a.b.c.d, deprecated) is compared as a.b.c.d too,
// so neither spelling gets past a check written for the IPv4 address. ::1 stays ::1.
boost::asio::ip::address destination_form(const boost::asio::ip::address& addr);

// 0.0.0.0/8, exactly ::, and the IPv4-mapped and IPv4-compatible spellings of 0.0.0.0/8
// (::0.x.y.z, ::1 excepted: that is IPv6 loopback): Linux connects a socket to 0.0.0.0
// (or ::) through loopback, so these are this host whatever the port.
bool is_unspecified_destination(const boost::asio::ip::address& addr);

}  // namespace netbox::proxy
