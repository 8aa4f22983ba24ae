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
// lease whose owner is dead, and netbox veths / tables with no lease at all.
GcReport collect_garbage_locked(const std::filesystem::path& state_dir);
// Takes the lock itself (for `netbox gc`).
GcReport collect_garbage(const std::filesystem::path& state_dir);

}  // namespace netbox::launcher
