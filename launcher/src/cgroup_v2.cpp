#include "netbox/launcher/cgroup_backend.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace netbox::launcher::cgroup_v2 {
namespace {

std::set<std::string> words(const std::filesystem::path& file) {
  std::set<std::string> out;
  std::istringstream in(read_cgroup_file(file).value_or(""));
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

bool covers(const std::set<std::string>& have, const std::set<std::string>& wanted) {
  for (const auto& w : wanted)
    if (!have.contains(w)) return false;
  return true;
}

void write_limit(const std::filesystem::path& file, const std::string& value, const std::string& flag) {
  try {
    write_cgroup_file(file, value);
  } catch (const std::exception& e) {
    throw std::runtime_error(flag + ": " + e.what());
  }
}

}  // namespace

std::set<std::string> controllers(const std::filesystem::path& dir) { return words(dir / "cgroup.controllers"); }

std::set<std::string> enabled(const std::filesystem::path& dir) { return words(dir / "cgroup.subtree_control"); }

bool enable(const std::filesystem::path& dir, const std::set<std::string>& wanted) {
  if (covers(enabled(dir), wanted)) return true;
  if (!covers(controllers(dir), wanted)) return false;
  std::string value;
  for (const auto& w : wanted) value += (value.empty() ? "+" : " +") + w;
  try {
    write_cgroup_file(dir / "cgroup.subtree_control", value);
  } catch (const std::exception&) {
    return false;  // e.g. EBUSY: a non-root cgroup with processes of its own
  }
  return true;
}

std::optional<std::filesystem::path> prepare_parent(const std::filesystem::path& mount,
                                                    const std::filesystem::path& own,
                                                    const std::set<std::string>& wanted) {
  // Delegated to us already, or the root (which may have processes and controllers
  // for its children at once). A non-root cgroup with processes, as the launcher's is,
  // cannot give its children domain controllers ("no internal processes"), and the
  // launcher changes no other cgroup it is in: netbox.slice at the top instead.
  if (covers(enabled(own), wanted)) return own;
  if (own == mount) return enable(own, wanted) ? std::optional(own) : std::nullopt;
  const auto slice = mount / "netbox.slice";
  if (!enable(mount, wanted)) return std::nullopt;
  if (::mkdir(slice.c_str(), 0755) != 0 && errno != EEXIST) return std::nullopt;
  if (!enable(slice, wanted)) return std::nullopt;
  return slice;
}

void apply_limits(const std::filesystem::path& dir, const CgroupLimits& limits) {
  if (limits.memory_bytes) {
    const std::string flag = "--memory " + limits.memory_text;
    write_limit(dir / "memory.max", std::to_string(*limits.memory_bytes), flag);
    // Without swap in the kernel there is no memory.swap.max, and nothing to limit.
    std::error_code ec;
    if (std::filesystem::exists(dir / "memory.swap.max", ec)) write_limit(dir / "memory.swap.max", "0", flag);
  }
  if (limits.cpus) {
    auto quota = static_cast<std::uint64_t>(std::llround(*limits.cpus * static_cast<double>(kCpuPeriodUs)));
    if (quota < 1000) quota = 1000;  // the kernel's minimum
    write_limit(dir / "cpu.max", std::to_string(quota) + " " + std::to_string(kCpuPeriodUs), "--cpus " + limits.cpus_text);
  }
  if (limits.pids) write_limit(dir / "pids.max", std::to_string(*limits.pids), "--pids " + limits.pids_text);
}

CgroupUsage read_usage(const std::filesystem::path& dir) {
  CgroupUsage u;
  u.memory_peak_bytes = cgroup_number(dir / "memory.peak");  // 5.19+
  u.oom_kill = cgroup_key(dir / "memory.events", "oom_kill");
  if (auto usec = cgroup_key(dir / "cpu.stat", "usage_usec")) u.cpu_usage_ms = *usec / 1000;
  u.pids_peak = cgroup_number(dir / "pids.peak");
  return u;
}

}  // namespace netbox::launcher::cgroup_v2
