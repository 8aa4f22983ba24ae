#pragma once
// What confines an agent, layer by layer: printed by `netbox launch --explain`
// (without running anything), shortened to one line as the startup banner, and as
// JSON in the agent's audit row.
#include <string>
#include <utility>
#include <vector>

namespace netbox::launcher {

struct SandboxReport {
  std::string name;      // the agent's
  std::string mode = "enforce";  // or report (--mode): the policy's refusals recorded, not enforced
  std::string user;      // "alice (uid 1000, gid 1000): the sudo caller (SUDO_UID)"
  std::string network;   // "own namespace; only route: the proxy (embedded, policy ...)"
  std::string pid = "own PID namespace, /proc with hidepid=2";
  std::string ipc_uts = "own IPC and UTS namespaces (hostname NAME)";
  std::string root = "the host's /, read-only, nosuid, nodev (pivot_root)";
  std::string workdir;                  // canonical; empty: none
  std::string no_workdir_reason;
  std::string workdir_mode;             // empty: written in place; else the overlay (--workdir-quota)
  bool workdir_writable = true;         // false: the agent's user cannot write it (owner, mode)
  std::vector<std::string> writable;    // every path the agent may write to on the host
  // Mounted read-write, but the host's owner and mode keep the agent's user out (the reason
  // in parentheses); not counted as writable.
  std::vector<std::string> not_writable;
  std::vector<std::string> read_only;   // --ro binds
  std::string memory;                   // "/tmp, /var/tmp, /dev/shm, HOME: one tmpfs of 1G"
  std::vector<std::string> hidden;      // paths covered by an empty folder or file
  std::string seccomp;
  std::string rlimits;
  std::vector<std::string> env_kept;    // variable names passed on from the launcher
  std::string trust = "the host's roots, unchanged";  // what the agent's TLS clients trust
  // Filled by the cgroup step: the backend ("v1", "v2 at ...") and one entry per limit
  // ({"memory", "1G"}); empty backend: no cgroup limits.
  std::string cgroup_backend;
  std::vector<std::pair<std::string, std::string>> cgroup_limits;
  std::string cgroup_plan_json;         // CgroupPlan::json(); empty: no plan
  std::vector<std::string> degraded;    // accepted missing layers (--allow-degraded)
  std::vector<std::string> warnings;    // weak spots the user should know of
};

// Several lines, one per layer, for --explain.
std::string render_report(const SandboxReport& report);
// The same as one JSON object (stored in the agents row's `sandbox` column, and
// `--explain --format json`): the report's fields by name, lists as arrays, and the
// cgroup plan as an object under "cgroup".
std::string render_report_json(const SandboxReport& report);
// One line for stderr at startup.
std::string render_banner(const SandboxReport& report);

}  // namespace netbox::launcher
