#include "netbox/guardian/token_bucket.hpp"

#include <algorithm>

namespace netbox::guardian {
namespace {
__extension__ using Wide = unsigned __int128;  // n * per overflows 64 bits for a large read over a minute
}  // namespace

TokenBucket::TokenBucket(std::uint64_t tokens, Clock::duration per, std::uint64_t burst, Clock::time_point now)
    : tokens_(std::max<std::uint64_t>(tokens, 1)), per_(per), burst_time_(cost(std::max<std::uint64_t>(burst, 1))),
      full_at_(now) {}

Clock::duration TokenBucket::cost(std::uint64_t n) const {
  // n * per / tokens, rounded up, without overflow for any n a relay can read.
  const auto ticks = static_cast<Wide>(n) * static_cast<Wide>(per_.count());
  return Clock::duration(static_cast<Clock::rep>((ticks + tokens_ - 1) / tokens_));
}

Clock::duration TokenBucket::take(Clock::time_point now, std::uint64_t n) {
  const auto after = std::max(full_at_, now) + cost(n);
  const auto allowed_at = after - burst_time_;
  if (allowed_at > now) return allowed_at - now;
  full_at_ = after;
  return Clock::duration::zero();
}

Clock::duration TokenBucket::reserve(Clock::time_point now, std::uint64_t n) {
  full_at_ = std::max(full_at_, now) + cost(n);
  const auto allowed_at = full_at_ - burst_time_;
  return allowed_at > now ? allowed_at - now : Clock::duration::zero();
}

std::uint64_t TokenBucket::retry_after_seconds(Clock::duration wait) {
  const auto s = std::chrono::ceil<std::chrono::seconds>(wait).count();
  return static_cast<std::uint64_t>(std::max<std::int64_t>(s, 1));
}

}  // namespace netbox::guardian
