#pragma once
// One agent's synthetic addresses (issue 15): the DNS view answers an allowed name with
// an address from this pool, and transparent capture maps the address an agent dials
// back to the name. The pool is the agent's own (the address space is the same for
// every agent; the proxy tells agents apart by their veth), so no agent can learn or
// steer another's mappings.
//
// A mapping lives `retain` after the last answer that handed it out (much longer than
// the TTL in the answers, for clients that cache past it), and is never given to
// another name while a connection holds it. When every address is mapped and alive,
// address_for fails (the DNS answer is SERVFAIL): a name is never silently remapped.
// A pool uses at most kMostAddresses addresses however large its block (an IPv6 block
// has 2^48 and more): each mapping keeps its name, so an agent resolving made-up names
// under an allowed wildcard would otherwise grow the proxy's memory by gigabytes and
// make the search for a free slot scan millions.
#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace netbox::dns {

class SyntheticPool {
 public:
  using Clock = std::chrono::steady_clock;
  // About 11 MiB of mappings at most, with names of the longest kind (253 bytes).
  static constexpr std::uint32_t kMostAddresses = 1u << 14;
  // `first` and `size`: the block's first address and how many it has (IPv4 or IPv6;
  // at most kMostAddresses are used).
  SyntheticPool(boost::asio::ip::address first, std::uint64_t size, std::chrono::seconds retain);

  std::optional<boost::asio::ip::address> address_for(const std::string& name, Clock::time_point now);
  // The name an address stands for while its mapping lives or a connection holds it.
  std::optional<std::string> name_for(const boost::asio::ip::address& a, Clock::time_point now) const;
  bool contains(const boost::asio::ip::address& a) const;
  // A connection to the address opens: the name it stands for (as name_for), and the
  // mapping then stays until every hold is released. nullopt: no live mapping, no hold.
  std::optional<std::string> hold(const boost::asio::ip::address& a, Clock::time_point now);
  void release(const boost::asio::ip::address& a);
  std::size_t mapped() const { return by_name_.size(); }

 private:
  struct Slot {
    std::string name;  // empty: free
    Clock::time_point expires{};
    std::uint32_t holds = 0;
  };
  std::optional<std::uint32_t> index_of(const boost::asio::ip::address& a) const;
  boost::asio::ip::address address_at(std::uint32_t index) const;
  bool reusable(const Slot& s, Clock::time_point now) const { return s.holds == 0 && s.expires <= now; }

  boost::asio::ip::address first_;
  std::uint32_t size_;
  std::chrono::seconds retain_;
  std::vector<Slot> slots_;  // grows as addresses are first used
  std::uint32_t hand_ = 0;   // where the search for a reusable slot goes on from
  std::unordered_map<std::string, std::uint32_t> by_name_;
};

}  // namespace netbox::dns
