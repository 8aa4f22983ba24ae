#pragma once
// Connecting to the addresses policy allowed. Only these addresses are ever dialled:
// there is no second lookup.
//
// Bounded happy eyeballs (RFC 8305 §5): the addresses are tried in order, the next one
// started 250 ms after the previous without waiting for it to fail (or at once when it
// fails), at most kMaxInFlight at a time, at most kMaxAddresses in all, each with the
// connect timeout, and all of it within the dial budget. The first to connect wins; the
// others are closed. A name with 400 black-holed addresses then holds its cap slot for
// the budget, not for 400 connect timeouts.
//
// Descriptors: a dial never takes one numbered at or above DialLimits::fd_ceiling. The
// kernel gives out the lowest free number, so a socket numbered n means n descriptors
// below it are open: past the ceiling, the proxy's idle upstream connections are closed
// (oldest first) to make room, and if none is left the dial fails (DialFailure::descriptors,
// answered 503). The numbers above the ceiling stay for accepting agents and the audit
// store, whatever agents make the proxy dial.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "netbox/policy/policy.hpp"
#include "upstream/upstream_pool.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace netbox::proxy {

enum class DialFailure { none, refused, timeout, descriptors, other };

struct DialResult {
  boost::asio::ip::tcp::socket socket;
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected (or last tried)
  DialFailure failure = DialFailure::none;
  std::string error;                        // what went wrong with each address tried
};

// The HTTP status a failed dial is answered with: 504 timed out, 503 out of descriptors,
// 502 otherwise.
inline unsigned http_status(DialFailure f) {
  return f == DialFailure::timeout ? 504 : f == DialFailure::descriptors ? 503 : 502;
}

struct DialLimits {
  std::chrono::milliseconds connect_timeout;  // per address
  std::chrono::milliseconds budget;           // the whole dial
  int fd_ceiling = std::numeric_limits<int>::max();  // see above
  UpstreamPool* pool = nullptr;                       // idle connections to close for room
  // What a profile's limits allow a dial of this proxy (its fd ceiling, its pool).
  static DialLimits of(const policy::Limits& l, int fd_ceiling, UpstreamPool* pool) {
    return {l.connect_timeout, l.effective_dial_budget(), fd_ceiling, pool};
  }
  static constexpr std::chrono::milliseconds kStagger{250};  // RFC 8305 "Connection Attempt Delay"
  static constexpr std::size_t kMaxInFlight = 3;
  static constexpr std::size_t kMaxAddresses = 16;
};

void dial(boost::asio::io_context& ioc, std::vector<boost::asio::ip::tcp::endpoint> endpoints, DialLimits limits,
          std::function<void(DialResult)> done);

}  // namespace netbox::proxy
