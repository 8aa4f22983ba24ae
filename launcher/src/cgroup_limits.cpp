// --memory, --cpus and --pids: validated with the rlimits' grammar for sizes and counts.
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/rlimits.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace netbox::launcher {
namespace {

constexpr std::uint64_t kMiB = 1024ULL * 1024;
// Docker's minimum: below this not even a shell starts, and the kernel may refuse it.
constexpr std::uint64_t kMinMemory = 6 * kMiB;
constexpr std::uint64_t kDefaultPids = 1024;

}  // namespace

std::uint64_t default_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  // Whole MiB, so that the default reads well in messages.
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2 / kMiB * kMiB;
}

CgroupLimits cgroup_limits(const CgroupFlags& flags) {
  CgroupLimits l;
  if (!flags.memory) {
    if (auto bytes = default_memory_bytes(); bytes >= kMinMemory) {
      l.memory_bytes = bytes;
      l.memory_text = std::to_string(bytes / kMiB) + "M";
    }
  } else {
    auto v = parse_size(*flags.memory);
    if (!v || *v == 0)
      throw LaunchError(kExitUsage, "--memory '" + *flags.memory + "': expected a size such as 512M, 4G or 'unlimited'");
    if (*v != RLIM_INFINITY) {
      if (*v < kMinMemory) throw LaunchError(kExitUsage, "--memory '" + *flags.memory + "': the minimum is 6M");
      l.memory_bytes = *v;
    }
    l.memory_text = *flags.memory;
  }
  if (flags.cpus) {
    const std::string& t = *flags.cpus;
    char* end = nullptr;
    double v = t.empty() || std::isspace(static_cast<unsigned char>(t[0])) ? NAN : std::strtod(t.c_str(), &end);
    if (!std::isfinite(v) || end != t.c_str() + t.size() || v < 0.01)
      throw LaunchError(kExitUsage, "--cpus '" + t + "': expected a number of CPUs such as 0.5 or 2 (at least 0.01)");
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && v > static_cast<double>(online))
      throw LaunchError(kExitUsage, "--cpus '" + t + "': this machine has " + std::to_string(online) + " CPUs");
    l.cpus = v;
    l.cpus_text = t;
  }
  if (!flags.pids) {
    l.pids = kDefaultPids;
    l.pids_text = std::to_string(kDefaultPids);
  } else {
    auto v = parse_count(*flags.pids);
    if (!v || *v == 0)
      throw LaunchError(kExitUsage, "--pids '" + *flags.pids + "': expected a whole number of processes or 'unlimited'");
    if (*v != RLIM_INFINITY) l.pids = *v;
    l.pids_text = *flags.pids;
  }
  return l;
}

}  // namespace netbox::launcher
