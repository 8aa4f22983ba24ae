#pragma once
// Where this process's cgroups are: /proc/self/cgroup says which cgroup it is in per
// hierarchy, /proc/self/mountinfo where each hierarchy is mounted. Pure parsing.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

// One line of /proc/PID/cgroup: "4:memory:/a/b", "0::/user.slice/x.scope".
struct ProcCgroupEntry {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for the v2 (unified) line; may hold "name=systemd"
  std::string path;                      // relative to the hierarchy's root, starts with '/'
};
std::vector<ProcCgroupEntry> parse_proc_cgroup(const std::string& text);

// A cgroup or cgroup2 mount from /proc/PID/mountinfo.
struct CgroupMount {
  std::filesystem::path mount_point;
  std::string root;                      // the folder of the hierarchy mounted there
  bool unified = false;                  // cgroup2
  std::vector<std::string> controllers;  // v1: from the super options ("cpu", "cpuacct", ...)
};
std::vector<CgroupMount> parse_cgroup_mounts(const std::string& mountinfo);

// This process's own cgroup folder in the v1 hierarchy of `controller` (or, with an
// empty controller, in the v2 hierarchy). nullopt when that hierarchy is not mounted
// or the process's cgroup lies outside what is mounted.
std::optional<std::filesystem::path> own_cgroup_dir(const std::vector<ProcCgroupEntry>& entries,
                                                    const std::vector<CgroupMount>& mounts,
                                                    const std::string& controller);
// The v2 mount point (the hierarchy's root as seen here), if any.
std::optional<std::filesystem::path> unified_mount(const std::vector<CgroupMount>& mounts);

}  // namespace netbox::launcher
