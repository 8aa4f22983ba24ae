#include "base/interface_watch.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

namespace netbox::proxy {

namespace asio = boost::asio;

InterfaceWatch::InterfaceWatch(asio::io_context& ioc, std::function<void()> changed)
    : sd_(ioc), changed_(std::move(changed)) {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return;
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return;
  }
  boost::system::error_code ec;
  sd_.assign(fd, ec);
  if (ec) ::close(fd);
}

void InterfaceWatch::start() {
  if (sd_.is_open()) read();
}

void InterfaceWatch::stop() {
  boost::system::error_code ec;
  sd_.close(ec);
}

void InterfaceWatch::read() {
  // What changed is not parsed: any notification (or ENOBUFS, notifications lost) means
  // "look again", and the look reads every address anyway.
  sd_.async_read_some(asio::buffer(buf_), [this](boost::system::error_code ec, std::size_t) {
    if (ec == asio::error::operation_aborted || !sd_.is_open()) return;
    if (ec && ec != asio::error::no_buffer_space) return;  // the periodic look stays
    // A burst (a launch adds a veth's addresses) is one look: take what is queued first.
    while (::recv(sd_.native_handle(), buf_.data(), buf_.size(), MSG_DONTWAIT) > 0) {
    }
    changed_();
    read();
  });
}

}  // namespace netbox::proxy
