#pragma once
// limits.bandwidth_up / bandwidth_down on an HTTP body (issue 25): after a relay passed
// bytes on, the pause they earned (ByteMeter::pace_up / pace_down: the agent's shared
// bucket) is waited out on a timer before the relay reads again, so the sender is slowed
// by TCP's own flow control and no byte is dropped; the io thread never blocks. A relay
// owns one; its timer is made on the first pause only (most agents are not shaped).
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <optional>
#include <utility>

namespace netbox::proxy {

class Pacer {
 public:
  using Duration = std::chrono::steady_clock::duration;

  // `then()` at once when `pause` is zero, else once it has passed. `then` keeps its
  // owner (and so this Pacer) alive.
  template <class Executor, class Then>
  void after(Duration pause, const Executor& on, Then then) {
    if (pause <= Duration::zero()) return then();
    if (!timer_) timer_.emplace(on);
    paused_ += pause;
    timer_->expires_after(pause);
    timer_->async_wait([then = std::move(then)](boost::system::error_code) mutable { then(); });
  }
  // The pauses of the relay under way, in all: time the sender was held back, not slow.
  Duration paused() const { return paused_; }
  void restart() { paused_ = Duration::zero(); }
  // A pause under way ends now (its `then` runs at once): its owner is stopping.
  void cancel() {
    if (timer_) timer_->cancel();
  }

 private:
  std::optional<boost::asio::steady_timer> timer_;
  Duration paused_{};
};

}  // namespace netbox::proxy
