#pragma once
// Endpoints netbox itself serves: its proxy listeners and the admin endpoint. No request
// through the proxy may reach them, whatever the policy allows: an agent whose policy
// lists 127.0.0.1 under internal.allow must still not read the audit API, scrape metrics,
// or loop the proxy into itself.
#include "snapshot.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <vector>

namespace netbox::proxy {

class OwnEndpoints {
 public:
  void add(const boost::asio::ip::tcp::endpoint& ep);
  void remove(const boost::asio::ip::tcp::endpoint& ep);
  // True if a connection to addr:port would land on one of them. A listener on a wildcard
  // address (0.0.0.0, ::) is reached through loopback and every local interface address.
  bool contains(const boost::asio::ip::address& addr, unsigned short port) const;

 private:
  struct State {
    std::vector<boost::asio::ip::tcp::endpoint> endpoints;
    std::vector<boost::asio::ip::address> local_addresses;  // read when a wildcard is added
  };
  mutable std::mutex write_mu_;  // add/remove are rare; readers only load the snapshot
  Snapshot<State> state_{std::make_shared<const State>()};
};

}  // namespace netbox::proxy
