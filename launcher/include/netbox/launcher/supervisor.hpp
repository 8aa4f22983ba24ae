#pragma once
// Waiting for the agent: signal forwarding, --timeout, exit status and rusage.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace netbox::launcher {

// The signals forwarded to the agent: INT TERM HUP QUIT USR1 USR2.
const int* forwarded_signals(int* count);
// Blocks the forwarded signals and SIGCHLD in the calling thread (before any other
// thread starts, so they inherit the mask and only the supervisor sees them).
void block_supervised_signals();

struct AgentOutcome {
  int exit_status = 0;             // shell convention
  long user_ms = 0;
  long sys_ms = 0;
  long max_rss_kb = 0;
  bool timed_out = false;
  std::string cgroup_json;         // what the agent's cgroup measured (CgroupUsage::json); empty: none
  std::optional<std::uint64_t> workdir_bytes_written;  // --workdir-quota: what the overlay took
  std::string resource_usage_json() const;
};

struct SuperviseOptions {
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_grace{5000};
  // Called before a signal is forwarded or sent to the agent: a frozen agent (the
  // guardian's freeze) would hold every signal pending, SIGKILL's effect included, and
  // the launch would never end. Thaws it (AgentCgroup). Empty: nothing to thaw.
  std::function<void()> thaw;
};

// Waits for `child`, forwarding signals; on timeout sends SIGTERM, then SIGKILL after
// the grace period, each announced on stderr.
AgentOutcome supervise(pid_t child, const SuperviseOptions& options);

}  // namespace netbox::launcher
