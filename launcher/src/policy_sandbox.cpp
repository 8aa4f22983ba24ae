#include "netbox/launcher/policy_sandbox.hpp"

namespace netbox::launcher {
namespace {

template <class T>
void fill(std::optional<T>& flag, const std::optional<T>& policy) {
  if (!flag && policy) flag = policy;
}

// Repeatable flags: given at all, they replace the policy's list (never merged, so what a
// command line shows is the whole list).
void fill(std::vector<std::string>& flag, const std::optional<std::vector<std::string>>& policy) {
  if (flag.empty() && policy) flag = *policy;
}

}  // namespace

LaunchOptions with_policy_sandbox(LaunchOptions o, const policy::SandboxSettings& s) {
  fill(o.workdir, s.workdir);
  fill(o.ro, s.ro);
  fill(o.rw, s.rw);
  fill(o.hide, s.hide);
  if (!o.tmp_size_given && s.tmp_size) o.tmp_size = *s.tmp_size;
  fill(o.workdir_quota, s.workdir_quota);
  fill(o.cgroup.memory, s.memory);
  fill(o.cgroup.cpus, s.cpus);
  fill(o.cgroup.pids, s.pids);
  fill(o.user, s.user);
  fill(o.allow_degraded, s.allow_degraded);
  if (!o.network_given && s.network) o.network = *s.network;
  return o;
}

}  // namespace netbox::launcher
