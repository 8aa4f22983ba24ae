#include "netbox/launcher/cgroup_backend.hpp"

#include <cmath>
#include <stdexcept>

namespace netbox::launcher::cgroup_v1 {
namespace {

void write_limit(const std::filesystem::path& file, const std::string& value, const std::string& flag) {
  try {
    write_cgroup_file(file, value);
  } catch (const std::exception& e) {
    throw std::runtime_error(flag + ": " + e.what());
  }
}

const std::filesystem::path* dir_of(const std::map<std::string, std::filesystem::path>& dir_for, const char* c) {
  auto it = dir_for.find(c);
  return it == dir_for.end() ? nullptr : &it->second;
}

}  // namespace

bool apply_limits(const std::map<std::string, std::filesystem::path>& dir_for, const CgroupLimits& limits) {
  bool swap_limited = true;
  if (auto* dir = dir_of(dir_for, "memory"); dir && limits.memory_bytes) {
    const std::string flag = "--memory " + limits.memory_text;
    const std::string value = std::to_string(*limits.memory_bytes);
    write_limit(*dir / "memory.limit_in_bytes", value, flag);
    // memory+swap no higher than memory: no swap. The file exists only with swap
    // accounting (swapaccount=1); without it the best v1 offers is not to prefer swap.
    std::error_code ec;
    if (std::filesystem::exists(*dir / "memory.memsw.limit_in_bytes", ec)) {
      write_limit(*dir / "memory.memsw.limit_in_bytes", value, flag);
    } else {
      write_limit(*dir / "memory.swappiness", "0", flag);
      swap_limited = false;
    }
  }
  if (auto* dir = dir_of(dir_for, "cpu"); dir && limits.cpus) {
    const std::string flag = "--cpus " + limits.cpus_text;
    auto quota = static_cast<std::uint64_t>(std::llround(*limits.cpus * static_cast<double>(kCpuPeriodUs)));
    if (quota < 1000) quota = 1000;
    write_limit(*dir / "cpu.cfs_period_us", std::to_string(kCpuPeriodUs), flag);
    write_limit(*dir / "cpu.cfs_quota_us", std::to_string(quota), flag);
  }
  if (auto* dir = dir_of(dir_for, "pids"); dir && limits.pids)
    write_limit(*dir / "pids.max", std::to_string(*limits.pids), "--pids " + limits.pids_text);
  return swap_limited;
}

CgroupUsage read_usage(const std::map<std::string, std::filesystem::path>& dir_for) {
  CgroupUsage u;
  if (auto* dir = dir_of(dir_for, "memory")) {
    u.memory_peak_bytes = cgroup_number(*dir / "memory.max_usage_in_bytes");
    // The oom_kill counter is there since 4.13.
    u.oom_kill = cgroup_key(*dir / "memory.oom_control", "oom_kill");
  }
  if (auto* dir = dir_of(dir_for, "cpuacct")) {
    if (auto ns = cgroup_number(*dir / "cpuacct.usage")) u.cpu_usage_ms = *ns / 1000000;
  }
  if (auto* dir = dir_of(dir_for, "pids")) u.pids_peak = cgroup_number(*dir / "pids.peak");
  return u;
}

}  // namespace netbox::launcher::cgroup_v1
