#pragma once
// The layers of one launch, as decided from its options, for --explain and the banner.
#include "netbox/launcher/agent_user_choice.hpp"
#include "netbox/launcher/degraded_layers.hpp"
#include "netbox/launcher/filesystem_view.hpp"
#include "netbox/launcher/hidden_paths.hpp"
#include "netbox/launcher/launch_options.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/sandbox_report.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <utility>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

// Everything but the cgroup limits, which the cgroup step adds.
SandboxReport describe_launch(const LaunchOptions& o, const std::string& name, const std::string& hostname,
                              const AgentUserChoice& who, const FilesystemView& view, const HiddenPaths& own_hidden,
                              const std::vector<RlimitSetting>& rlimits, const DegradedLayers& degraded,
                              const std::optional<std::filesystem::path>& audit_db);

// The one line at exit (issue 27 item 5): how the agent ended, after how long, its requests
// allowed and refused (nullopt: not counted here, a running proxy's), and the `netbox
// audit` command that lists them. "netbox launch: claude-3f9a1c exited 0 after 1m12s; 14
// requests allowed, 2 refused: netbox audit --db DB --agent claude-3f9a1c".
struct LaunchSummary {
  std::string name;
  int exit_status = 0;
  bool timed_out = false;
  std::chrono::milliseconds duration{0};
  std::optional<std::pair<std::uint64_t, std::uint64_t>> allowed_refused;
  std::optional<std::filesystem::path> audit_db;  // nullopt: the default store
  std::string mode = "enforce";                   // report: "report mode: ..." and the reported count
  std::uint64_t reported = 0;                     // let through in report mode, refused under enforce
};
std::string render_summary(const LaunchSummary& s);

// `arg` as one word for a POSIX shell: itself when safe, else in single quotes.
std::string shell_quote(const std::string& arg);

}  // namespace netbox::launcher
