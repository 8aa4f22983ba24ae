#pragma once
// A token bucket: `tokens` every `per`, at most `burst` saved up. Two uses:
//  - a request rate (requests_per_minute): take(now) either takes a token or says how long
//    until one is there, which is the exact Retry-After of the 429;
//  - shaping (bandwidth_up / bandwidth_down): reserve(now, bytes) always takes the bytes and
//    says how long the relay must pause before reading again, so a flow is slowed, never
//    dropped; the debt a large read leaves is paid back by that pause.
// Kept as the generic cell rate algorithm's one time point (when the bucket would be full
// again) in integer nanoseconds, with each cost computed exactly from the rate's two
// integers: no floating-point drift, so waiting exactly the answer is always enough.
// Not thread-safe: the owner (one agent's guardian) serialises its calls.
#include <chrono>
#include <cstdint>

namespace netbox::guardian {

using Clock = std::chrono::steady_clock;

class TokenBucket {
 public:
  // `tokens` >= 1 every `per` > 0, `burst` >= 1. The bucket starts full.
  TokenBucket(std::uint64_t tokens, Clock::duration per, std::uint64_t burst, Clock::time_point now);

  // Takes `n` tokens when there are that many; else takes none and answers how long until
  // there will be (never zero).
  [[nodiscard]] Clock::duration take(Clock::time_point now, std::uint64_t n = 1);
  // Takes `n` tokens whatever is there (the balance may go below zero) and answers how long
  // until it is back to zero: the pause before the next read. Zero: no pause.
  [[nodiscard]] Clock::duration reserve(Clock::time_point now, std::uint64_t n);

  // Whole seconds, rounded up, as Retry-After wants them (at least 1).
  static std::uint64_t retry_after_seconds(Clock::duration wait);

 private:
  Clock::duration cost(std::uint64_t n) const;  // the time `n` tokens take to come

  std::uint64_t tokens_;
  Clock::duration per_;
  Clock::duration burst_time_;  // cost(burst)
  Clock::time_point full_at_;   // the bucket is full from then on
};

}  // namespace netbox::guardian
