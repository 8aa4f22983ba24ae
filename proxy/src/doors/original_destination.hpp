#pragma once
// Where a captured connection was going before the agent's DNAT sent it to the capture
// listener: the conntrack entry's original destination, IPv4 or IPv6.
#include <boost/asio/ip/tcp.hpp>

#include <optional>

namespace netbox::proxy {

// nullopt: the socket was not NATed (someone dialled the capture port directly).
std::optional<boost::asio::ip::tcp::endpoint> original_destination(boost::asio::ip::tcp::socket& s);

}  // namespace netbox::proxy
