#include "netbox/dns/synthetic_pool.hpp"

#include <algorithm>

namespace netbox::dns {
namespace {

using boost::asio::ip::address;

// The address `offset` places after `base`, IPv4 or IPv6 (carry across the bytes).
address add(const address& base, std::uint32_t offset) {
  if (base.is_v4()) return boost::asio::ip::make_address_v4(base.to_v4().to_uint() + offset);
  auto bytes = base.to_v6().to_bytes();
  std::uint64_t carry = offset;
  for (int i = 15; i >= 0 && carry; --i) {
    carry += bytes[static_cast<std::size_t>(i)];
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(carry & 0xff);
    carry >>= 8;
  }
  return boost::asio::ip::make_address_v6(bytes);
}

}  // namespace

SyntheticPool::SyntheticPool(address first, std::uint64_t size, std::chrono::seconds retain)
    : first_(first), size_(static_cast<std::uint32_t>(std::min<std::uint64_t>(size, kMostAddresses))), retain_(retain) {}

address SyntheticPool::address_at(std::uint32_t index) const { return add(first_, index); }

std::optional<std::uint32_t> SyntheticPool::index_of(const address& a) const {
  if (a.is_v4() != first_.is_v4()) return std::nullopt;
  if (a.is_v4()) {
    const std::uint32_t base = first_.to_v4().to_uint(), v = a.to_v4().to_uint();
    if (v < base || v - base >= size_) return std::nullopt;
    return v - base;
  }
  // IPv6: the first 11 bytes must be the block's, the offset is in the last five (the
  // pool never spans more than kMostAddresses).
  const auto b = first_.to_v6().to_bytes(), x = a.to_v6().to_bytes();
  std::uint64_t base = 0, v = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i < 11 && b[i] != x[i]) return std::nullopt;
    if (i >= 11) {
      base = (base << 8) | b[i];
      v = (v << 8) | x[i];
    }
  }
  if (v < base || v - base >= size_) return std::nullopt;
  return static_cast<std::uint32_t>(v - base);
}

bool SyntheticPool::contains(const address& a) const { return index_of(a).has_value(); }

std::optional<address> SyntheticPool::address_for(const std::string& name, Clock::time_point now) {
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    Slot& s = slots_[it->second];
    s.expires = std::max(s.expires, now + retain_);
    return address_at(it->second);
  }
  std::optional<std::uint32_t> pick;
  if (slots_.size() < size_) {
    pick = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    // Every address was handed out once: take the next whose mapping has ended and
    // that no connection holds, going round from where the last search stopped.
    for (std::uint32_t n = 0; n < size_ && !pick; ++n) {
      const std::uint32_t i = (hand_ + n) % size_;
      if (reusable(slots_[i], now)) pick = i;
    }
    if (!pick) return std::nullopt;
    hand_ = (*pick + 1) % size_;
    by_name_.erase(slots_[*pick].name);
  }
  Slot& s = slots_[*pick];
  s.name = name;
  s.expires = now + retain_;
  s.holds = 0;
  by_name_.emplace(name, *pick);
  return address_at(*pick);
}

std::optional<std::string> SyntheticPool::name_for(const address& a, Clock::time_point now) const {
  auto i = index_of(a);
  if (!i || *i >= slots_.size()) return std::nullopt;
  const Slot& s = slots_[*i];
  if (s.name.empty() || (s.holds == 0 && s.expires <= now)) return std::nullopt;
  return s.name;
}

std::optional<std::string> SyntheticPool::hold(const address& a, Clock::time_point now) {
  auto name = name_for(a, now);
  if (name) ++slots_[*index_of(a)].holds;
  return name;
}

void SyntheticPool::release(const address& a) {
  auto i = index_of(a);
  if (i && *i < slots_.size() && slots_[*i].holds > 0) --slots_[*i].holds;
}

}  // namespace netbox::dns
