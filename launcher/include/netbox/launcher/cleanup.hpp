#pragma once
// Undoing a launch's host-side state on every path (normal exit, agent killed,
// timeout, launcher error). A launcher killed with SIGKILL leaves this to `netbox gc`.
#include "netbox/launcher/subnet_pool.hpp"

#include <functional>
#include <utility>

namespace netbox::launcher {

// Removes the host nftables table, the veth (if the namespace has not taken it down
// already) and finally the lease. Never throws; problems are reported on stderr.
void remove_launch_network(const Lease& lease) noexcept;

// Runs a function at scope exit unless dismissed.
class ScopeExit {
 public:
  explicit ScopeExit(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~ScopeExit() {
    if (fn_) fn_();
  }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;
  void dismiss() { fn_ = nullptr; }

 private:
  std::function<void()> fn_;
};

}  // namespace netbox::launcher
