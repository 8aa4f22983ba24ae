#include "netbox/tls/leaf_cache.hpp"

namespace netbox::tls {
namespace {
// A leaf closer than this to its end is minted again, so one handed out now outlives
// any connection that may still be using it.
constexpr std::chrono::hours kRenewBefore{24};
}  // namespace

LeafCache::LeafCache(const CertificateAuthority& ca, std::size_t capacity)
    : minter_(ca), capacity_(capacity == 0 ? 1 : capacity) {}

std::shared_ptr<const Leaf> LeafCache::get(const std::string& host) {
  const auto fresh_until = std::chrono::system_clock::now() + kRenewBefore;
  {
    std::lock_guard lock(mutex_);
    auto it = index_.find(host);
    if (it != index_.end()) {
      if (it->second->second->not_after > fresh_until) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
      order_.erase(it->second);
      index_.erase(it);
    }
  }
  // Signing takes tens of microseconds: not under the lock other threads look up in.
  auto leaf = std::make_shared<const Leaf>(minter_.mint(host));
  std::lock_guard lock(mutex_);
  ++minted_;
  auto it = index_.find(host);
  if (it != index_.end()) {  // another thread minted it meanwhile: keep one
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  order_.emplace_front(host, leaf);
  index_.emplace(host, order_.begin());
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return leaf;
}

std::size_t LeafCache::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

std::size_t LeafCache::minted() const {
  std::lock_guard lock(mutex_);
  return minted_;
}

}  // namespace netbox::tls
