#include "netbox/launcher/degraded_layers.hpp"

#include "netbox/launcher/launch.hpp"

#include <algorithm>

namespace netbox::launcher {

const std::vector<std::string_view>& degradable_layers() {
  static const std::vector<std::string_view> layers = {"workdir", "ro", "rw", "workdir-quota", "cgroup"};
  return layers;
}

DegradedLayers::DegradedLayers(const std::vector<std::string>& accepted) : accepted_(accepted) {
  const auto& known = degradable_layers();
  for (const auto& layer : accepted_) {
    if (std::find(known.begin(), known.end(), layer) != known.end()) continue;
    std::string names;
    for (auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    throw LaunchError(kExitUsage, "--allow-degraded '" + layer + "': no such layer; expected one of " + names);
  }
}

bool DegradedLayers::accepts(std::string_view layer) const {
  return std::find(accepted_.begin(), accepted_.end(), layer) != accepted_.end();
}

}  // namespace netbox::launcher
