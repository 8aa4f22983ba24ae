#include "usage.hpp"

#include "netbox/policy/near_miss.hpp"

#include <iostream>

namespace netbox::cli {

std::string command_path(const CLI::App& cmd) {
  std::string path;
  for (const CLI::App* at = &cmd; at->get_parent() != nullptr; at = at->get_parent())
    path.insert(0, " " + at->get_name());
  return "netbox" + path;
}

std::string near_miss(std::string_view given, const std::vector<std::string>& names) {
  const std::string best =
      policy::closest_name(given.substr(0, given.find('=')), std::vector<std::string_view>(names.begin(), names.end()));
  return best.empty() ? std::string() : " (did you mean " + best + "?)";
}

int usage_error(const CLI::App& cmd, std::string_view message) {
  const std::string where = command_path(cmd);
  std::cerr << where << ": " << message << "\nRun '" << where << " --help' for usage.\n";
  return kExitUsage;
}

}  // namespace netbox::cli
