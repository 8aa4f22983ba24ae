#include "netbox/guardian/event_window.hpp"

#include <algorithm>

namespace netbox::guardian {

EventWindow::EventWindow(std::size_t threshold, Clock::duration window)
    : threshold_(std::max<std::size_t>(threshold, 1)), window_(window) {
  times_.reserve(threshold_);
}

bool EventWindow::add(Clock::time_point now) {
  if (times_.size() < threshold_) {
    times_.push_back(now);
  } else {
    times_[next_] = now;
    next_ = (next_ + 1) % threshold_;
  }
  if (times_.size() < threshold_) return false;
  if (window_ == Clock::duration::zero()) return true;
  const auto oldest = times_[next_ % threshold_];
  const bool holds = now - oldest <= window_;
  const bool crossed = holds && !holding_;
  holding_ = holds;
  return crossed;
}

std::size_t EventWindow::count(Clock::time_point now) const {
  if (window_ == Clock::duration::zero()) return times_.size();
  return static_cast<std::size_t>(
      std::count_if(times_.begin(), times_.end(), [&](Clock::time_point t) { return now - t <= window_; }));
}

}  // namespace netbox::guardian
