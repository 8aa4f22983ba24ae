#include "netbox/guardian/byte_budget.hpp"

#include <algorithm>

namespace netbox::guardian {

std::uint64_t ByteBudget::charge(std::uint64_t n) {
  std::uint64_t used = used_.load(std::memory_order_relaxed);
  while (true) {
    if (used >= limit_) return 0;
    const std::uint64_t take = std::min(n, limit_ - used);
    if (used_.compare_exchange_weak(used, used + take, std::memory_order_relaxed)) return take;
  }
}

}  // namespace netbox::guardian
