#pragma once
// Undoing a launch's host-side state on every path (normal exit, agent killed,
// timeout, launcher error). A launcher killed with SIGKILL leaves this to `netbox gc`.
#include "netbox/launcher/subnet_pool.hpp"

#include <functional>
#include <thread>
#include <utility>

namespace netbox::launcher {

// Removes the host nftables table and the veth side by side: each costs the kernel
// at least one RCU grace period, and run together those waits overlap. Call once the
// agent's init is reaped: the veth is then left to its dying namespace, which takes it
// down sooner than a delete of our own, and deleted here only if it is still there
// after a bounded wait. Never throws; problems go to stderr.
void remove_launch_network(const Lease& lease) noexcept;

// Owns a launch's host network from the lease on. start() begins the removal on a
// thread, so the caller can do other work (recording the agent's exit) meanwhile;
// the destructor waits for it (or removes synchronously if never started) and then
// releases the lease, last, so that nothing is left once the launch has returned and
// whatever failed stays attributable to a (now dead) owner for `netbox gc`.
class LaunchNetwork {
 public:
  // `link`: a veth and a host table were made for it (a running proxy's agent); else the
  // lease holds only the agent's uid and there is nothing of the network to remove.
  LaunchNetwork(Lease lease, bool link) : lease_(std::move(lease)), removed_(!link) {}
  ~LaunchNetwork();
  LaunchNetwork(const LaunchNetwork&) = delete;
  LaunchNetwork& operator=(const LaunchNetwork&) = delete;

  const Lease& lease() const { return lease_; }
  void start() noexcept;

 private:
  Lease lease_;
  std::thread removal_;
  bool removed_ = false;
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
