#pragma once
// limits.bandwidth_up / bandwidth_down on an HTTP body (issue 25): after a relay passed
// bytes on, the pause they earned (ByteMeter::pace_up / pace_down: the agent's shared
// bucket) is waited out on a timer before the relay reads again, so the sender is slowed
// by TCP's own flow control and no byte is dropped; the io thread never blocks. A relay
// owns one; its timer is made on the first pause only (most agents are not shaped). A
// relay with an idle timer of its own (tunnels, upgraded relays) stops it while a pause
// is under way (idle_deadline); the HTTP body relays arm their streams' timers per read or
// write, never across a pause.
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
    pausing_ = true;
    timer_->async_wait([this, then = std::move(then)](boost::system::error_code) mutable {
      pausing_ = false;
      then();
    });
  }
  // A pause is under way: the relay's idle clock stands still (idle_deadline).
  bool pausing() const { return pausing_; }
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
  bool pausing_ = false;
};

// When a relay whose bytes last moved at `last` has been idle for `idle`: a pause under way
// is netbox's own (limits.bandwidth_*), not the agent's or the upstream's silence, so the
// clock runs again only from its end (the relay notes activity when a pause ends).
inline std::chrono::steady_clock::time_point idle_deadline(std::chrono::steady_clock::time_point last,
                                                           std::chrono::milliseconds idle, bool pausing) {
  return (pausing ? std::chrono::steady_clock::now() : last) + idle;
}

}  // namespace netbox::proxy
