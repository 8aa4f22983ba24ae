#pragma once
// What an agent may be called. The name goes into every audit row of the agent and picks
// its profile, so it must say who it is: "anonymous" is what rows of unregistered clients
// say (an agent under it would be indistinguishable from them), and a control character
// in it would reach an operator's terminal through every log and export.
#include <string>
#include <string_view>

namespace netbox::proxy {

// Why `name` cannot name an agent ("is missing or empty; ..."), or "" when it can.
std::string agent_name_problem(std::string_view name);

}  // namespace netbox::proxy
