#pragma once
// The presets `netbox launch --preset NAME` ships: for each coding agent, the launch
// keys it needs (its own folders in HOME, its variables) and the policy it runs under.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::cli {

struct Preset {
  std::string_view name;     // "claude"
  std::string_view command;  // the agent's executable ("claude"); `args` go after it
  // A JSON object: "launch" (keys as in launch.json; "~/" is the invoking user's HOME,
  // paths in ro/rw that do not exist are left out), "policy" (a policy, used when no
  // --policy is given), "args" (put after the command when it is `command`) and
  // "credential" (with a CA and the key set: the API host inspected, the key injected).
  std::string_view json;
};

const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view name);

}  // namespace netbox::cli
