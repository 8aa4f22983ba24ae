#pragma once
// Connecting to the addresses policy allowed, in order, each with the connect timeout.
// Only these addresses are ever dialled: there is no second lookup.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace netbox::proxy {

enum class DialFailure { none, refused, timeout, other };

struct DialResult {
  boost::asio::ip::tcp::socket socket;
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected (or last tried)
  DialFailure failure = DialFailure::none;
  std::string error;                        // what went wrong with each address tried
};

void dial(boost::asio::io_context& ioc, std::vector<boost::asio::ip::tcp::endpoint> endpoints,
          std::chrono::milliseconds timeout, std::function<void(DialResult)> done);

}  // namespace netbox::proxy
