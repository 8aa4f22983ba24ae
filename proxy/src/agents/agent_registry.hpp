#pragma once
// Client address -> agent identity. Read on every accept, written only when a launcher
// registers or leaves, so readers take an atomic snapshot and writers copy the map.
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "netbox/audit/record.hpp"
#include "netbox/policy/policy.hpp"

#include "base/snapshot.hpp"

namespace netbox::proxy {

class Tripwire;
class ApprovalBook;

// What rows of clients that nothing identifies say.
inline constexpr std::string_view kAnonymousAgent = "anonymous";

struct AgentIdentity {
  std::string agent{kAnonymousAgent};
  std::string profile;  // key of the policy's `agents`; empty: the top-level profile
  // Its credentials (credentials.hpp), fixed when it was attached; null: none.
  std::shared_ptr<const Tripwire> tripwire;
  // The address its client connections are counted under (ClientSlots): an agent with an
  // IPv6 address too is one agent with one bound, not two. Unspecified: its own address.
  boost::asio::ip::address counted_as;
  // An agent known by its sockets: the cookie of the network namespace they are in (the
  // launcher made them there), which keys its DNS view and capture. 0: known by address.
  std::uint64_t netns = 0;
  // Attached with `ask` (netbox launch --ask): the book its askable refusals are parked in
  // (pipeline/approvals.hpp); null: refused at once.
  ApprovalBook* asks = nullptr;
  bool is_anonymous() const { return agent == kAnonymousAgent && netns == 0; }
  // One connection's, set by identify_client: the lookup of the agent's process that opened
  // it (attribution.hpp). Invalid: none (a client known by its address).
  std::shared_future<audit::ProcessOrigin> origin{};
  // The address to count a connection from `peer` under.
  boost::asio::ip::address slot_address(const boost::asio::ip::address& peer) const {
    return counted_as.is_unspecified() ? peer : counted_as;
  }
};

// IPv4-mapped IPv6 peers (from a dual-stack listener) are keyed as plain IPv4.
boost::asio::ip::address canonical_address(const boost::asio::ip::address& a);

// The key of an agent known by its sockets in every map keyed by address (its entries,
// DNS view, capture listeners, client slots): made from its namespace's cookie in a range
// no peer ever has (fd00:6e62:6e73::/64, never an address on any interface: no connection
// arrives from it, so no address lookup finds such an agent).
boost::asio::ip::address netns_key(std::uint64_t cookie);
// The cookie of the network namespace socket `fd` lives in (SO_NETNS_COOKIE); 0: unknown.
std::uint64_t netns_cookie(int fd);

class AgentRegistry {
 public:
  AgentRegistry();
  AgentIdentity lookup(const boost::asio::ip::address& addr) const;
  // The identity registered under `addr`, if any (lookup answers an anonymous one).
  std::optional<AgentIdentity> find(const boost::asio::ip::address& addr) const;
  void add(const boost::asio::ip::address& addr, AgentIdentity who);
  bool remove(const boost::asio::ip::address& addr);

  // An agent's own listener (its capture listeners, the HTTP and SOCKS5 listeners on the
  // host side of its link) and the addresses registered for that agent: a connection
  // accepted there is that agent's or nobody's. Without this, a source the agent made up
  // on its link (an IPv6 link-local address needs no privilege) would be looked up,
  // found nowhere, and decided as `anonymous` under the top-level profile.
  void add_link(const boost::asio::ip::tcp::endpoint& local, const std::vector<boost::asio::ip::address>& agent);
  void remove_link(const boost::asio::ip::tcp::endpoint& local);
  // The identity of a connection from `peer` accepted on `local`. Nullopt: refused, for
  // `local` is an agent's own listener and `peer` is not an address registered (now) for
  // that agent. On any other listener: lookup(peer), anonymous when unregistered.
  // `netns`: the cookie of the namespace the accepting socket is in; a namespace an agent's
  // sockets were attached from makes the connection that agent's, whatever its addresses.
  std::optional<AgentIdentity> identify(const boost::asio::ip::tcp::endpoint& local,
                                        const boost::asio::ip::address& peer, std::uint64_t netns = 0) const;
  // The registered agents whose profile `p` has no agents entry for, in words ("agent
  // a1 uses profile ci, which ..."); empty when every one has its profile.
  std::string profiles_missing_from(const policy::Policy& p) const;
  // Agents registered now, each once (an agent with an IPv6 address too is one), for the
  // netbox_attached_agents gauge.
  std::size_t attached() const;
  // The proxy's own network namespace: sockets there are identified by address.
  std::uint64_t own_netns() const { return own_netns_; }

 private:
  using Map = std::map<boost::asio::ip::address, AgentIdentity>;
  using Links = std::map<boost::asio::ip::tcp::endpoint, std::set<boost::asio::ip::address>>;
  std::uint64_t own_netns_;
  Snapshot<Map> map_;
  Snapshot<Links> links_;
  std::mutex write_mu_;
};

}  // namespace netbox::proxy
