#pragma once
// Undoing a launch's host-side state on every path (normal exit, agent killed,
// timeout, launcher error). A launcher killed with SIGKILL leaves this to `netbox gc`.
#include "netbox/launcher/subnet_pool.hpp"

#include <functional>
#include <utility>

namespace netbox::launcher {

// Holds a launch's lease (its agent uid, and the number that names its cgroup and, with a
// running proxy, its synthetic pools) and releases it at scope exit. A launched agent
// has no host network left to remove (its link is sockets in its own namespace, which
// the kernel takes down on its own, off the launch's path): nothing here waits.
class LaunchLease {
 public:
  explicit LaunchLease(Lease lease) : lease_(std::move(lease)) {}
  ~LaunchLease() { release_lease(lease_); }
  LaunchLease(const LaunchLease&) = delete;
  LaunchLease& operator=(const LaunchLease&) = delete;

  const Lease& lease() const { return lease_; }

 private:
  Lease lease_;
};

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
