#pragma once
// A byte budget (limits.bytes_up / bytes_down, per agent per launch or per destination
// pattern): every relay of the agent, on any io thread, charges what it is about to send,
// and gets back how much of it the budget still allows. A relay sends only that much, so
// the budget holds to the byte on every path; then it stops, and the connection's row says
// why. Lock-free: charges from many connections at once never allow more than the limit
// together.
#include <atomic>
#include <cstdint>

namespace netbox::guardian {

class ByteBudget {
 public:
  explicit ByteBudget(std::uint64_t limit) : limit_(limit) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  // Takes up to `n` bytes from what is left and answers how many it took (0 when spent).
  std::uint64_t charge(std::uint64_t n);

  bool exhausted() const { return used_.load(std::memory_order_relaxed) >= limit_; }
  std::uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const { return limit_; }

 private:
  const std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace netbox::guardian
