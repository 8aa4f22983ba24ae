#include "usage.hpp"

#include <iostream>

namespace netbox::cli {

std::string command_path(const CLI::App& cmd) {
  std::string path;
  for (const CLI::App* at = &cmd; at->get_parent() != nullptr; at = at->get_parent())
    path.insert(0, " " + at->get_name());
  return "netbox" + path;
}

int usage_error(const CLI::App& cmd, std::string_view message) {
  const std::string where = command_path(cmd);
  std::cerr << where << ": " << message << "\nRun '" << where << " --help' for usage.\n";
  return kExitUsage;
}

}  // namespace netbox::cli
