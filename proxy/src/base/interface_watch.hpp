#pragma once
// Says when an address is added to or removed from one of this host's interfaces
// (a NETLINK_ROUTE socket in the RTMGRP_IPV4_IFADDR / RTMGRP_IPV6_IFADDR groups, read on
// an io thread), so the proxy refuses a new host address at once rather than at its next
// periodic look. Where the socket cannot be had, the periodic look is all there is.
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <functional>
#include <memory>

namespace netbox::proxy {

class InterfaceWatch {
 public:
  // `changed` runs on the io_context's thread, once per batch of notifications.
  InterfaceWatch(boost::asio::io_context& ioc, std::function<void()> changed);
  bool active() const { return sd_.is_open(); }
  void start();
  void stop();

 private:
  void read();
  boost::asio::posix::stream_descriptor sd_;
  std::function<void()> changed_;
  std::array<char, 16384> buf_{};
};

}  // namespace netbox::proxy
