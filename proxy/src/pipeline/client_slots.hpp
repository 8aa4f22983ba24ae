#pragma once
// Agent connections open at once, per client address and in total. The request caps
// (caps.hpp) count exchanges in flight; an idle keep-alive connection holds none, so
// without this one client could hold connections until the proxy ran out of descriptors
// and no other agent was answered. Taken at accept as an RAII slot, given back when the
// agent's connection closes (a tunnel carries the slot on).
#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace netbox::proxy {

class ClientSlots;

class ClientSlot {
 public:
  ClientSlot() = default;
  ClientSlot(ClientSlot&& o) noexcept { *this = std::move(o); }
  ClientSlot& operator=(ClientSlot&& o) noexcept;
  ClientSlot(const ClientSlot&) = delete;
  ClientSlot& operator=(const ClientSlot&) = delete;
  ~ClientSlot() { release(); }
  void release();
  explicit operator bool() const { return slots_ != nullptr; }

 private:
  friend class ClientSlots;
  ClientSlot(ClientSlots* slots, boost::asio::ip::address addr) : slots_(slots), addr_(addr) {}
  ClientSlots* slots_ = nullptr;
  boost::asio::ip::address addr_;
};

struct ClientSlotResult {
  ClientSlot slot;     // empty when a limit was hit
  std::string reason;  // then: which one, in words
};

class ClientSlots {
 public:
  ClientSlots(std::size_t total, std::size_t per_agent) : max_total_(total), max_per_agent_(per_agent) {}
  // `peer` is keyed canonically (IPv4-mapped IPv6 as IPv4): one agent, one count.
  ClientSlotResult acquire(const boost::asio::ip::address& peer);
  std::size_t total() const;
  std::size_t max_total() const { return max_total_; }
  std::size_t max_per_agent() const { return max_per_agent_; }

 private:
  friend class ClientSlot;
  void release(const boost::asio::ip::address& addr);

  const std::size_t max_total_;
  const std::size_t max_per_agent_;
  mutable std::mutex mu_;
  std::size_t total_ = 0;
  std::map<boost::asio::ip::address, std::size_t> per_agent_;
};

}  // namespace netbox::proxy
