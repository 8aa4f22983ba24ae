#pragma once
// A value read on every accepted connection and replaced rarely (policy, agent map):
// readers copy a shared_ptr under a short uncontended lock, writers swap it.
// (libstdc++ 12's std::atomic<std::shared_ptr> works, but its lock-bit scheme is opaque
// to ThreadSanitizer, and the suite must pass under it.)
#include <memory>
#include <mutex>

namespace netbox::proxy {

template <class T>
class Snapshot {
 public:
  explicit Snapshot(std::shared_ptr<const T> v = nullptr) : value_(std::move(v)) {}
  std::shared_ptr<const T> load() const {
    std::lock_guard lock(mu_);
    return value_;
  }
  void store(std::shared_ptr<const T> v) {
    std::lock_guard lock(mu_);
    value_.swap(v);
  }  // the old value is released outside the lock, when `v` goes out of scope

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const T> value_;
};

}  // namespace netbox::proxy
