#pragma once
// The layers of one launch, as decided from its options, for --explain and the banner.
#include "netbox/launcher/agent_user_choice.hpp"
#include "netbox/launcher/degraded_layers.hpp"
#include "netbox/launcher/filesystem_view.hpp"
#include "netbox/launcher/hidden_paths.hpp"
#include "netbox/launcher/launch_options.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/sandbox_report.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

// Everything but the cgroup limits, which the cgroup step adds.
SandboxReport describe_launch(const LaunchOptions& o, const std::string& name, const std::string& hostname,
                              const AgentUserChoice& who, const FilesystemView& view, const HiddenPaths& own_hidden,
                              const std::vector<RlimitSetting>& rlimits, const DegradedLayers& degraded,
                              const std::optional<std::filesystem::path>& audit_db);

}  // namespace netbox::launcher
