#pragma once
// The decision functions: the only place a verdict is made.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/policy.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>

namespace netbox::policy {

// Step 1, before any lookup: deny rules on the name, allow rules, the port list.
// An allow here means "go on and resolve"; a deny is final. For an IP literal, this
// also runs the address checks (there is nothing to resolve).
Decision decide_name(const Profile& profile, const Host& host, uint16_t port);

// Step 2, for every address the name resolved to (or the literal): deny rules on
// addresses, internal ranges unless in internal.allow, then the allow list (a name
// that matched an allow rule, or an address inside an allowed network).
Decision decide_address(const Profile& profile, const Host& host, uint16_t port,
                        const boost::asio::ip::address& addr);

// If `addr` lies in an internal range, the range's description ("RFC 1918",
// "loopback", "cloud metadata", "IPv4-mapped loopback" ...); otherwise empty.
std::string internal_range(const boost::asio::ip::address& addr);

}  // namespace netbox::policy
