#pragma once
// Fail closed: a layer the user asked for that cannot be applied stops the launch
// (exit 125, naming the flag) before the agent runs, unless the user accepted that
// layer's absence by name with --allow-degraded LAYER.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::launcher {

// The names --allow-degraded takes, with what accepting each means (docs/launch.md):
//   workdir  a --workdir that does not exist: the agent gets no writable folder
//   ro       a --ro source that does not exist: that bind is left out
//   rw       a --rw source that does not exist: that bind is left out
//   workdir-quota  no overlayfs in this kernel: the workdir is written in place
// (Layers added later, e.g. cgroup limits, add their names here.)
const std::vector<std::string_view>& degradable_layers();

class DegradedLayers {
 public:
  DegradedLayers() = default;
  // Throws LaunchError (exit 2) naming an unknown layer.
  explicit DegradedLayers(const std::vector<std::string>& accepted);
  bool accepts(std::string_view layer) const;
  // Records that an accepted layer is missing, with why; shown in the banner and --explain.
  void note(std::string text) { notes_.push_back(std::move(text)); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::vector<std::string> accepted_;
  std::vector<std::string> notes_;
};

}  // namespace netbox::launcher
