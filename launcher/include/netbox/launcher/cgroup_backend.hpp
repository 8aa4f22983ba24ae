#pragma once
// The file-level work on one cgroup, per version: writing limits, moving a process in,
// reading what was measured, killing what is left. Folders are parameters, so the v2
// backend is tested on a plain directory tree shaped like /sys/fs/cgroup.
#include "netbox/launcher/cgroup.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace netbox::launcher {

// Small file helpers shared by both versions. write_cgroup_file throws
// std::runtime_error naming the file and the errno.
void write_cgroup_file(const std::filesystem::path& file, const std::string& value);
std::optional<std::string> read_cgroup_file(const std::filesystem::path& file);
// "key value" lines (memory.events, cpu.stat, memory.oom_control).
std::optional<std::uint64_t> cgroup_key(const std::filesystem::path& file, const std::string& key);
std::optional<std::uint64_t> cgroup_number(const std::filesystem::path& file);
// Moves `pid` (all its threads) into the cgroup at `dir`.
void attach_to_cgroup(const std::filesystem::path& dir, pid_t pid);
// SIGKILLs whatever is in the cgroup (cgroup.kill on v2 where the kernel has it), waits
// until it is empty and removes the folder; bounded. Returns an error text or "".
std::string remove_cgroup(const std::filesystem::path& dir, CgroupVersion version) noexcept;
// Thaws the cgroup at `dir` if it has a freezer (v1 freezer.state, v2 cgroup.freeze);
// errors are ignored: this is cleanup's first step.
void thaw_cgroup(const std::filesystem::path& dir) noexcept;
// The processes in the cgroup at `dir` now.
std::vector<pid_t> cgroup_procs(const std::filesystem::path& dir);
// SIGKILLs what is in the cgroup (cgroup.kill on v2 where the kernel has it), thawing it
// where it is frozen (a frozen v1 task dies only once thawed), until it is empty or
// `deadline`; true when empty.
bool kill_cgroup(const std::filesystem::path& dir, CgroupVersion version, std::chrono::steady_clock::time_point deadline);

namespace cgroup_v2 {
// The controllers `dir`'s children can be given (its cgroup.controllers).
std::set<std::string> controllers(const std::filesystem::path& dir);
// Which of `wanted` are already enabled for `dir`'s children (cgroup.subtree_control).
std::set<std::string> enabled(const std::filesystem::path& dir);
// Enables `wanted` for `dir`'s children; returns false when the kernel refuses.
bool enable(const std::filesystem::path& dir, const std::set<std::string>& wanted);
// Where the agent's cgroup goes: the launcher's own cgroup when its children have every
// wanted controller already (or it is the root), else `mount`/netbox.slice, set up for
// that. nullopt when neither can have them.
std::optional<std::filesystem::path> prepare_parent(const std::filesystem::path& mount,
                                                    const std::filesystem::path& own,
                                                    const std::set<std::string>& wanted);
// memory.max with memory.swap.max 0, cpu.max "QUOTA PERIOD", pids.max.
void apply_limits(const std::filesystem::path& dir, const CgroupLimits& limits);
CgroupUsage read_usage(const std::filesystem::path& dir);
}  // namespace cgroup_v2

namespace cgroup_v1 {
// memory.limit_in_bytes (and memory.memsw.limit_in_bytes where swap is accounted, else
// memory.swappiness 0; returns false then), cpu.cfs_quota_us/cfs_period_us, pids.max.
// `dir_for` maps controller -> folder; a controller absent from it is skipped.
bool apply_limits(const std::map<std::string, std::filesystem::path>& dir_for, const CgroupLimits& limits);
CgroupUsage read_usage(const std::map<std::string, std::filesystem::path>& dir_for);
}  // namespace cgroup_v1

// The CPU period used for --cpus, in microseconds (Docker's).
inline constexpr std::uint64_t kCpuPeriodUs = 100000;

}  // namespace netbox::launcher
