#pragma once
// `netbox launch`: run one agent confined to its own namespaces, whose only way out
// is the netbox proxy. Returns the agent's exit status (128+N when killed by signal N).
#include "netbox/launcher/launch_options.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

namespace netbox::launcher {

inline constexpr int kExitUsage = 2;            // bad flag, policy, user, seccomp file
inline constexpr int kExitLauncherFailure = 125;
// --timeout ended the agent: 124, as timeout(1) says it (the agents row keeps the agent's
// own status, 143 or 137, for how it ended).
inline constexpr int kExitTimeout = 124;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// A failure the launcher reports with a clear message and a specific exit status.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(int exit_code, const std::string& what) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }
 private:
  int exit_code_;
};

struct LaunchPlan;  // launch_plan.hpp

// plan_launch (launch_plan.hpp), then with --explain the plan printed, else run(plan).
// Throws LaunchError before the agent starts; afterwards everything is cleaned up
// on every path and the agent's status is returned.
int launch(const LaunchOptions& options);

// Carries out a plan: needs root (or the capabilities privileges.hpp names). `started`:
// when the launch began, for the summary's duration.
int run(const LaunchPlan& plan, std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());

}  // namespace netbox::launcher
