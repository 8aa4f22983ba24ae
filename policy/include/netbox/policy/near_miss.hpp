#pragma once
// "did you mean ...?" for a misspelt name: the policy's keys, the CLI's options,
// subcommands and config-file keys all suggest through this one function.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::policy {

// The name in `names` at most two edits from `given` (the closest, the first on a tie);
// empty when none is.
std::string closest_name(std::string_view given, const std::vector<std::string_view>& names);

}  // namespace netbox::policy
