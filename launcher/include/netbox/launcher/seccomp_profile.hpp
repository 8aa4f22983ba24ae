#pragma once
// The agent's seccomp filter: the built-in default profile, or a Docker/OCI JSON profile.
#include <linux/filter.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace netbox::launcher {

// A compiled filter, built in the launcher (so errors surface before the agent
// starts) and loaded in the agent right before exec.
class SeccompFilter {
 public:
  SeccompFilter();
  ~SeccompFilter();
  SeccompFilter(SeccompFilter&&) noexcept;
  SeccompFilter& operator=(SeccompFilter&&) noexcept;
  bool empty() const;
  // The BPF program, compiled in the launcher so the agent only has to install it
  // (no allocation in the agent once its rlimits are set). Throws on failure.
  std::vector<sock_filter> compile() const;
  void* native() const { return ctx_; }
  explicit SeccompFilter(void* ctx) : ctx_(ctx) {}
 private:
  void* ctx_ = nullptr;
};

// EPERM for namespace, mount, tracing, kernel-module, keyring, io_uring ... syscalls,
// ENOSYS for clone3 (so libc falls back to clone, whose flags can be checked), and
// EAFNOSUPPORT for socket/socketpair outside AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
// with NETLINK_ROUTE (any upper bit set in the family or netlink protocol included).
SeccompFilter default_seccomp_filter();

// Docker's format: defaultAction, defaultErrnoRet, architectures, syscalls[{names,
// action, errnoRet, args, includes, excludes}]. Throws LaunchError (exit 2) naming
// the file and the key that is wrong.
SeccompFilter seccomp_filter_from_file(const std::filesystem::path& file);
SeccompFilter seccomp_filter_from_json(const std::string& text, const std::string& source);

// Installs a compiled program in the calling thread (needs no_new_privs). Returns 0 or errno.
int install_seccomp_program(const std::vector<sock_filter>& program);

// "default" | "off" | FILE
SeccompFilter seccomp_filter_for(const std::string& flag);

}  // namespace netbox::launcher
