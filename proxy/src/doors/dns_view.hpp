#pragma once
// The DNS view of the policy one agent sees (issue 15 item 1): UDP and TCP port 53 on the
// host side of the agent's link. An allowed name is answered with an address from the
// agent's own synthetic pool; a denied one with NXDOMAIN and an audit row of kind `dns`.
// Nothing is ever forwarded: the answers come from the policy and the pool alone, so no
// byte of a query name leaves the proxy (DNS tunnelling is impossible by construction).
#include "netbox/dns/message.hpp"
#include "netbox/dns/synthetic_pool.hpp"
#include "netbox/policy/cidr.hpp"

#include "agents/agent_registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace netbox::proxy {

struct DoorServices;

// How often one agent's refused names become rows: one row per name per minute, and at most
// kRowsPerMinute names a minute; repeats and names past that are counted in one summary row
// (host "*", `count` the queries it stands for) at the next minute or at detach, so a flood
// of random names (DNS tunnelling) cannot flood the store and SUM(count) stays exact.
class DnsRefusalRows {
 public:
  static constexpr std::size_t kRowsPerMinute = 32;
  using Clock = std::chrono::steady_clock;
  // What was refused without a row of its own since the last summary: the repeats of each
  // name that has a row this minute (so that SUM(count) per host is exact), and the
  // refusals of names past the bound (one row, host "*").
  struct Suppressed {
    std::vector<std::pair<std::string, std::uint64_t>> repeats;
    std::uint64_t past_bound = 0;
    bool empty() const { return repeats.empty() && past_bound == 0; }
  };
  // Whether a refusal of `name` now gets its own row.
  bool take(const std::string& name, Clock::time_point now);
  // The refusals counted, not written, since the last call; resets the tally.
  Suppressed take_suppressed();
  // The minute changed since the last call (a summary is due if anything was suppressed).
  bool window_over(Clock::time_point now) const { return now - window_start_ >= std::chrono::minutes(1); }

 private:
  Clock::time_point window_start_{};
  std::unordered_map<std::string, std::uint64_t> written_;  // names with a row this window -> repeats since
  std::uint64_t past_bound_ = 0;
};

class DnsView : public std::enable_shared_from_this<DnsView> {
 public:
  static constexpr std::uint32_t kTtl = 30;                       // seconds, in every answer
  static constexpr std::chrono::seconds kRetain{600};             // a mapping outlives its answers
  static constexpr std::size_t kMaxTcpConnections = 16;
  static constexpr std::size_t kMaxMessage = 4096;  // a query is far smaller; more is malformed
  static constexpr std::chrono::seconds kTcpIdle{10};

  // Binds UDP and TCP `host`:53 (throws naming the address); serves on `ioc`. A records
  // come from `pool`, AAAA records from `pool6` (none: AAAA gets no records).
  DnsView(DoorServices& rt, boost::asio::io_context& ioc, boost::asio::ip::address host,
          boost::asio::ip::address agent_addr, const policy::Cidr& pool,
          const std::optional<policy::Cidr>& pool6 = std::nullopt);
  // On the UDP and TCP sockets made in the agent's own namespace (AgentSockets), taken over
  // (closed with the view): every query there is the agent's, known by its key `agent`
  // (netns_key), whatever address it comes from. Throws when they cannot be used.
  DnsView(DoorServices& rt, boost::asio::io_context& ioc, int udp_fd, int tcp_fd, boost::asio::ip::address agent,
          const policy::Cidr& pool, const std::optional<policy::Cidr>& pool6 = std::nullopt);
  ~DnsView();
  void start();
  // Closes the sockets (on their io thread) and writes the pending summary row.
  void stop();

  // The answer to one DNS message from the agent; empty: drop it. `peer` for the row.
  std::vector<std::uint8_t> answer(std::span<const std::uint8_t> message, const std::string& peer);

  // For transparent capture: the name a synthetic address stands for, held while a
  // connection uses it (release when it ends).
  std::optional<std::string> hold(const boost::asio::ip::address& a);
  void release(const boost::asio::ip::address& a);
  bool is_synthetic(const boost::asio::ip::address& a) const;
  const policy::Cidr& pool() const { return pool_range_; }
  const std::optional<policy::Cidr>& pool6() const { return pool6_range_; }
  const boost::asio::ip::address& host() const { return host_; }

 private:
  class TcpClient;
  void receive();
  void accept();
  AgentIdentity who() const;
  // Whether a query or connection from `peer` is the agent's.
  bool from_agent(const boost::asio::ip::address& peer) const;
  // A query or connection from an address other than the agent's: counted and logged.
  void refuse_foreign(const boost::asio::ip::address& peer, std::uint16_t port);
  void write_row(const AgentIdentity& who, const std::string& peer, const dns::Query& q, const std::string& decision,
                 const std::string& rule, const std::string& reason);
  void write_summary(const AgentIdentity& who, const DnsRefusalRows::Suppressed& suppressed);
  // The pool `a` belongs to by family (under mu_); null: none of that family.
  dns::SyntheticPool* pool_of(const boost::asio::ip::address& a);

  DoorServices& rt_;
  boost::asio::io_context& ioc_;
  boost::asio::ip::address host_;
  boost::asio::ip::address agent_addr_;
  bool own_sockets_ = false;  // in the agent's namespace: every peer is the agent
  boost::asio::ip::udp::socket udp_;
  boost::asio::ip::tcp::acceptor tcp_;
  std::vector<std::uint8_t> udp_buffer_;
  boost::asio::ip::udp::endpoint udp_peer_;
  std::size_t tcp_clients_ = 0;  // on the io thread only

  mutable std::mutex mu_;  // the pool and the rows: the transparent listener runs on other threads
  dns::SyntheticPool pool_;
  policy::Cidr pool_range_;
  std::optional<dns::SyntheticPool> pool6_;
  std::optional<policy::Cidr> pool6_range_;
  DnsRefusalRows rows_;
};

}  // namespace netbox::proxy
