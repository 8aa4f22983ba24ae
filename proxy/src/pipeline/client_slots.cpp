#include "pipeline/client_slots.hpp"

#include "agents/agent_registry.hpp"

namespace netbox::proxy {

ClientSlot& ClientSlot::operator=(ClientSlot&& o) noexcept {
  if (this != &o) {
    release();
    slots_ = o.slots_;
    addr_ = o.addr_;
    o.slots_ = nullptr;
  }
  return *this;
}

void ClientSlot::release() {
  if (slots_) slots_->release(addr_);
  slots_ = nullptr;
}

ClientSlotResult ClientSlots::acquire(const boost::asio::ip::address& peer) {
  const auto addr = canonical_address(peer);
  ClientSlotResult r;
  std::lock_guard lock(mu_);
  if (total_ >= max_total_) {
    r.reason = "the proxy already holds " + std::to_string(total_) + " agent connections (the most it takes)";
    return r;
  }
  auto& n = per_agent_[addr];
  if (n >= max_per_agent_) {
    r.reason = addr.to_string() + " already holds " + std::to_string(n) + " connections (the most one agent may hold)";
    return r;
  }
  ++n;
  ++total_;
  r.slot = ClientSlot(this, addr);
  return r;
}

void ClientSlots::release(const boost::asio::ip::address& addr) {
  std::lock_guard lock(mu_);
  --total_;
  if (auto it = per_agent_.find(addr); it != per_agent_.end() && --it->second == 0) per_agent_.erase(it);
}

std::size_t ClientSlots::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace netbox::proxy
