#include "process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace netbox::dashboards {
namespace {

// The fields of /proc/self/stat after the command name (which may hold spaces and
// parentheses, so it is skipped up to the last ')'); index 0 is field 3, the state.
std::vector<std::string> stat_fields() {
  std::ifstream f("/proc/self/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

// Seconds since the epoch at which the machine booted, from /proc/stat's btime.
double boot_time() {
  std::ifstream f("/proc/stat");
  for (std::string key; f >> key;) {
    if (key == "btime") {
      double t = 0;
      f >> t;
      return t;
    }
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

void add_process_metrics(Exposition& e) {
  const auto fields = stat_fields();
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  // stat(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (pages); fields[i] is field i+3.
  if (fields.size() > 21 && ticks > 0) {
    e.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", {},
              (std::stod(fields[11]) + std::stod(fields[12])) / ticks);
    e.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", {}, std::stod(fields[20]));
    e.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {}, std::stod(fields[21]) * page);
    if (const double boot = boot_time(); boot > 0)
      e.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", {},
              boot + std::stod(fields[19]) / ticks);
  }
  std::error_code ec;
  std::size_t open = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    ++open;
  // The iterator's own descriptor is one of them.
  if (!ec && open > 0) e.gauge("process_open_fds", "Number of open file descriptors.", {}, static_cast<double>(open - 1));
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    e.gauge("process_max_fds", "Maximum number of open file descriptors.", {}, static_cast<double>(nofile.rlim_cur));
}

}  // namespace netbox::dashboards
