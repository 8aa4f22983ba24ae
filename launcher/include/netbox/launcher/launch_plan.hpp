#pragma once
// A launch is a plan, then a run (launch.hpp). plan_launch decides everything a launch
// will do from its options: every check a user can fail (exit 2), the policy and profile,
// the agent's user, the file-system view and the paths hidden in it, the credentials'
// secrets and placeholders, the cgroup and rlimits, the report that --explain and the
// banner print, and the confined child's spec. It reads (the policy file, the passwd
// database, the launcher's environment, /proc/self/cgroup, a running proxy's file names)
// but creates, mounts, clones and changes nothing, and needs no privilege: it is tested
// without root (tests/unit/launcher/launch_plan_test.cpp). run() then carries it out.
#include "netbox/launcher/agent_user_choice.hpp"
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/confined_child.hpp"
#include "netbox/launcher/credential_secrets.hpp"
#include "netbox/launcher/hidden_paths.hpp"
#include "netbox/launcher/launch_options.hpp"
#include "netbox/launcher/sandbox_report.hpp"
#include "netbox/policy/policy.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace netbox::launcher {

struct LaunchPlan {
  // The flags, with the policy's `sandbox` settings filled in where no flag was given.
  LaunchOptions options;
  // The embedded proxy's policy (--mode applied); none with a running proxy and no --policy.
  std::optional<policy::Policy> policy;
  std::string name;     // --name, or the command's file name and a short random id
  std::string profile;  // the policy's agents entry the agent is decided with; empty: the top level
  bool dns_view = false;
  AgentUserChoice who;
  CgroupPlan cgroup;
  // The embedded proxy's audit store; none with a running proxy (it names its own in `own`).
  std::optional<std::filesystem::path> audit_db;
  NetboxFiles own;               // netbox's own files, hidden from the agent
  std::string running_proxy_ca;  // the CA a running proxy inspects with (PEM); empty: none
  // The secrets stay with the launcher (and go to the proxy); the child gets placeholders.
  LaunchCredentials credentials;
  SandboxReport report;
  // Everything the child needs but what only the run has: its stdio, the netbox CA's
  // trust files (read as root), and a uid of its own (who.own_uid: leased by the run).
  ChildSpec child;
};

// Throws LaunchError(kExitUsage) naming the flag, file or key for every mistake a user can
// make, before anything exists.
LaunchPlan plan_launch(const LaunchOptions& options);

// The same lines --explain prints: the report, in text or JSON (--format).
std::string render_plan(const LaunchPlan& plan);

}  // namespace netbox::launcher
