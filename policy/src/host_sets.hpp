#pragma once
// The host sets a policy's "include" names (`"include": ["@python", "@github"]`): the
// hosts each tool or vendor needs, written once and kept up to date with netbox, so a
// policy does not guess them. docs/policy.md lists them; each entry says why it is there.
#include <string_view>
#include <vector>

namespace netbox::policy::detail {

struct HostSet {
  std::string_view name;                // "@python"
  std::string_view what;                // one line for docs and messages
  std::vector<std::string_view> hosts;  // allow entries, as a policy writes them
};

const std::vector<HostSet>& host_sets();
const HostSet* find_host_set(std::string_view name);

}  // namespace netbox::policy::detail
