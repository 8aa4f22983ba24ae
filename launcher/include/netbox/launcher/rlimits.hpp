#pragma once
// Resource limits for the agent: defaults that suit agents, overridable per flag.
#include "netbox/launcher/launch_options.hpp"

#include <sys/resource.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

struct RlimitSetting {
  int resource = 0;   // RLIMIT_*
  rlim_t value = 0;   // soft and hard; RLIM_INFINITY for unlimited
  std::string name;   // "as", "nproc", ... for messages
};

// "4G", "512M", "64k", "1024", "unlimited" (binary units). nullopt when malformed.
std::optional<rlim_t> parse_size(const std::string& text);
// A plain count or "unlimited".
std::optional<rlim_t> parse_count(const std::string& text);

// Defaults merged with the flags; core is always 0. Throws LaunchError (exit 2)
// naming the flag for a malformed value.
// `pids_cgroup`: the agent's cgroup has a pids limit, which then bounds its processes:
// RLIMIT_NPROC (a per-user count, across the machine) defaults to unlimited instead of 1024.
std::vector<RlimitSetting> agent_rlimits(const RlimitFlags& flags, bool pids_cgroup = false);

// Applies each limit (soft = hard = value, never above the current hard limit).
// Async-signal-safe enough for a forked child: no allocation. Returns errno or 0.
int apply_rlimits(const std::vector<RlimitSetting>& limits);

}  // namespace netbox::launcher
