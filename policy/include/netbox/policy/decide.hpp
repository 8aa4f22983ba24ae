#pragma once
// The decision functions: the only place a verdict is made.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/policy.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <optional>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace netbox::policy {

// Step 1, before any lookup: deny rules on the name, allow rules, the port list.
// An allow here means "go on and resolve"; a deny is final. For an IP literal, this
// also runs the address checks (there is nothing to resolve).
Decision decide_name(const Profile& profile, const Host& host, uint16_t port);

// The DNS view (issue 15): may an agent learn that `name` exists at all? Name rules only,
// port-independent: a deny entry without a port refuses it, any allow entry for the name
// (whatever its port) or a network allow (the addresses decide later, at connect time)
// answers it. What is answered is a synthetic address, so letting a name through here
// grants nothing: every connection is decided again, in full, by the steps below.
Decision decide_dns_name(const Profile& profile, const std::string& name);

// The DNS view of an agent launched with --ask: `by_name` (decide_dns_name's) turned into
// an answer when only the missing allow entry refuses it (no rule matched), so that the
// agent's connection reaches the proxy and a person can be asked about it. A deny entry's
// refusal stays. The answer is a synthetic address: it grants nothing.
Decision answer_to_ask(Decision by_name, const std::string& name);

// Step 1b, for a name `by_name` let through only pending its addresses (no allow entry
// lists it; a network entry may allow where it resolves to): the lookup itself would send
// the name, and whatever data the agent encoded in it, to the resolver and on to whoever
// runs the name's domain. Refused (rule resolve_unlisted_names) unless the policy pins the
// name in `resolve` or sets "resolve_unlisted_names": true. nullopt: go on.
std::optional<Decision> unlisted_lookup_refused(const Policy& policy, const Profile& profile, const Decision& by_name,
                                                const std::string& name);

// Step 2, for every address the name resolved to (or the literal): deny rules on
// addresses, internal ranges unless in internal.allow, then the allow list (a name
// that matched an allow rule, or an address inside an allowed network).
Decision decide_address(const Profile& profile, const Host& host, uint16_t port,
                        const boost::asio::ip::address& addr);

// Says why addr:port is netbox itself (a refusal reason), or empty when it is not: the
// proxy's own endpoints, which no policy can allow (rule `netbox`, in every mode).
using OwnEndpoint = std::function<std::string(const boost::asio::ip::address&, uint16_t)>;

// The verdict on a destination once its addresses are known: the one place the name's
// decision and the addresses' decisions are merged.
struct Destination {
  // allow, report or deny. Let through: the address decision, except that a report on
  // either step wins (the row must show that the policy would have refused). Denied: the
  // first refused address's decision (or netbox's own endpoint).
  Decision decision;
  std::vector<boost::asio::ip::address> allowed;  // in resolution order; empty when denied
  // The address the audit row names: the first allowed one, else the first refused one.
  std::optional<boost::asio::ip::address> shown;
};

// Step 3: `name` is what decide_name said (and let through) for host:port; `addresses`
// what the host resolved to (or its literal). Every address is decided with
// decide_address and checked against `own_endpoint`; those let through may be dialled.
// `name` is read, not taken: it is copied only when it is the answer (a report by name).
Destination decide_destination(const Profile& profile, const Host& host, uint16_t port, const Decision& name,
                               std::span<const boost::asio::ip::address> addresses,
                               const OwnEndpoint& own_endpoint);

// If `addr` lies in an internal range, the range's description ("RFC 1918",
// "loopback", "cloud metadata", "IPv4-mapped loopback" ...); otherwise empty.
std::string internal_range(const boost::asio::ip::address& addr);

}  // namespace netbox::policy
