#pragma once
// Removing what launchers that died (SIGKILL, power loss) left behind.
#include <filesystem>
#include <string>
#include <vector>

namespace netbox::launcher {

struct GcReport {
  std::vector<std::string> removed;   // human-readable, one per item
};

// Call with the state lock held: removes the lease, veth and nftables table of every
// lease whose owner is dead, and its cgroups; with `orphans`, also netbox veths and
// tables no lease names. Only launchers before the socket link (issue 24) made veths and
// tables, so each launch leaves that scan (a dump of the host's nftables tables, about
// 0.4 ms) to `netbox gc`.
GcReport collect_garbage_locked(const std::filesystem::path& state_dir, bool orphans = true);
// Takes the lock itself (for `netbox gc`).
GcReport collect_garbage(const std::filesystem::path& state_dir);

}  // namespace netbox::launcher
