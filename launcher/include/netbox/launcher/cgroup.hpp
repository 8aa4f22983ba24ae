#pragma once
// The agent's cgroup: --memory, --cpus and --pids (Docker's names), enforced by the
// kernel for the agent's whole process tree, and its memory peak, OOM kills and CPU time
// read back for the agents row. cgroup v2 first; v1 (one hierarchy per controller)
// where the v2 hierarchy does not offer the controllers.
#include "netbox/launcher/launch_options.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace netbox::launcher {

// The limits, validated (LaunchError exit 2 naming the flag). Unset: no limit.
struct CgroupLimits {
  std::optional<std::uint64_t> memory_bytes;
  std::optional<double> cpus;
  std::optional<std::uint64_t> pids;
  std::string memory_text;  // as given (or the default, e.g. "12054M"), for messages
  std::string cpus_text;
  std::string pids_text;
};
CgroupLimits cgroup_limits(const CgroupFlags& flags);
// The default --memory: half of the machine's RAM.
std::uint64_t default_memory_bytes();

enum class CgroupVersion { none, v1, v2 };

// Where the agent's cgroup goes, decided without changing anything; what `--explain`
// prints. `parents` maps each controller the launch uses ("memory", "cpu", "pids",
// "cpuacct" on v1; "memory", "cpu", "pids" on v2, all the same folder) to the folder
// the agent's cgroup is made in.
struct CgroupPlan {
  CgroupLimits limits;
  CgroupVersion version = CgroupVersion::none;
  std::map<std::string, std::filesystem::path> parents;
  std::vector<std::string> missing;   // "--memory 128M: no memory controller ..." per flag not applicable
  std::vector<std::string> notes;     // e.g. swap not accounted per cgroup
  bool allow_degraded = false;        // --allow-degraded cgroup
  std::filesystem::path unified_mount;  // v2: the hierarchy's root (where netbox.slice goes)
  std::filesystem::path unified_own;    // v2: the launcher's own cgroup
  std::string backend() const;        // "v2", "v1" or "none"
  // One line per fact, for a report: backend, each limit, folders, notes.
  std::vector<std::string> describe() const;
  // The same as JSON, for a stored report: {"backend":"v1","memory_bytes":..,"cpus":..,
  // "pids":..,"parents":{"memory":"/sys/..."},"missing":[..],"notes":[..]}; an unset
  // limit is null.
  std::string json() const;
};

// What `netbox launch` would do with these options on this machine.
CgroupPlan describe_cgroup_plan(const LaunchOptions& options);
// The same from given texts: /proc/self/cgroup and /proc/self/mountinfo (for tests).
CgroupPlan plan_cgroup(const CgroupLimits& limits, bool allow_degraded, const std::string& proc_self_cgroup,
                       const std::string& mountinfo);

// What the cgroup measured; unset where the kernel does not say.
struct CgroupUsage {
  std::optional<std::uint64_t> memory_peak_bytes;
  std::optional<std::uint64_t> oom_kill;
  std::optional<std::uint64_t> cpu_usage_ms;
  std::optional<std::uint64_t> pids_peak;
  std::string json() const;  // {"memory_peak_bytes":..,"oom_kill":..,...}
};

// The line for stderr after an OOM kill in the agent's cgroup (empty when none).
std::string oom_report(const CgroupUsage& usage, const CgroupLimits& limits, int exit_status);

// The agent's cgroup, from creation to removal. Made (limits written) before the agent's
// init is cloned; the init is moved in before it forks the agent. The destructor kills
// whatever is still in it and removes it on every path; a launcher killed outright leaves
// a record in STATE_DIR/cgroups for `netbox gc`.
class AgentCgroup {
 public:
  // Fails closed: a limit that cannot be applied throws LaunchError 125 naming its flag,
  // unless the plan allows degrading (then a warning on stderr, and the rest applies).
  AgentCgroup(const CgroupPlan& plan, const std::string& name, const std::filesystem::path& state_dir);
  ~AgentCgroup();
  AgentCgroup(const AgentCgroup&) = delete;
  AgentCgroup& operator=(const AgentCgroup&) = delete;

  void attach(pid_t pid);       // throws LaunchError 125
  // The same on a thread: a write to cgroup.procs waits for an RCU grace period (about
  // 10 ms on v1), which then overlaps the launcher's other work. finish_attach() joins
  // it and throws what attach() would have.
  void start_attach(pid_t pid);
  void finish_attach();
  CgroupUsage usage() const;
  const std::vector<std::filesystem::path>& dirs() const { return dirs_; }

  // The guardian's freeze and kill switch (issue 25). A frozen agent runs no instruction
  // until thawed (cgroup v2's cgroup.freeze; v1's freezer hierarchy, where mounted) and
  // can still be killed. can_freeze() is false without either: freeze() then throws
  // std::runtime_error saying so, never pretends.
  bool can_freeze() const;
  void freeze();  // returns once the kernel says every process is frozen (bounded: throws after 5 s)
  void thaw();
  bool frozen() const;
  // SIGKILLs every process of the agent, frozen or not, and waits until the cgroup is
  // empty, at most `wait`. True when it is: the agent is gone, not merely signalled.
  bool kill_all(std::chrono::milliseconds wait);

 private:
  // A limit that cannot be had: a warning when the plan allows degrading, else everything
  // made so far removed and LaunchError 125 thrown.
  void fail(const CgroupPlan& plan, const std::string& why);
  void write_record(const CgroupPlan& plan, const std::string& name, const std::filesystem::path& state_dir);
  void make_v2(const CgroupPlan& plan, const std::string& name, const CgroupLimits& limits);
  void make_v1(const CgroupPlan& plan, const std::string& name, const CgroupLimits& limits);

  CgroupVersion version_ = CgroupVersion::none;
  std::map<std::string, std::filesystem::path> dir_for_;  // controller -> the agent's folder
  std::vector<std::filesystem::path> dirs_;               // each folder once
  std::filesystem::path record_;
  std::thread attaching_;
  std::exception_ptr attach_error_;
};

// For `netbox gc`: removes the cgroups of launchers that are gone (recorded in
// STATE_DIR/cgroups, or named netbox-* under this process's own cgroups with no live
// record), killing what is left in them first. Appends one line per removal.
void collect_cgroup_garbage(const std::filesystem::path& state_dir, std::vector<std::string>& removed);

}  // namespace netbox::launcher
