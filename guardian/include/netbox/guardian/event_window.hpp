#pragma once
// "N events in a window" (a guardian trigger such as `denied >= 20 in 60s`): add() records
// one event and says whether the last `threshold` of them all fall within `window`. It keeps
// only the last `threshold` times, so an agent that makes a million denials costs the same
// memory as one that makes twenty. Not thread-safe: the owner serialises its calls.
#include <chrono>
#include <cstddef>
#include <vector>

namespace netbox::guardian {

class EventWindow {
 public:
  using Clock = std::chrono::steady_clock;
  // `threshold` >= 1; a zero window means "any `threshold` events, however far apart".
  EventWindow(std::size_t threshold, Clock::duration window);

  // True when this event makes `threshold` within `window` and the events before it did
  // not: a trigger fires once per crossing, not again on every event while the threshold
  // holds (an agent denied 1000 times a minute is killed once, its webhook told once).
  // Once the last `threshold` events no longer fall within `window`, the next crossing
  // fires again. A zero window ("any `threshold` events") fires on every event from the
  // threshold on: a bare EVENT trigger acts on each one.
  bool add(Clock::time_point now);
  // Events in the window ending at `now` (at most `threshold`).
  std::size_t count(Clock::time_point now) const;

 private:
  std::size_t threshold_;
  Clock::duration window_;
  std::vector<Clock::time_point> times_;  // a ring of the last `threshold_` events
  std::size_t next_ = 0;                  // where the next one goes (the oldest when full)
  bool holding_ = false;                  // the threshold held at the last event: fired already
};

}  // namespace netbox::guardian
