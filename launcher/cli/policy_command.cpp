// `netbox policy`: not built yet (see the issue that owns it).
#include "commands.hpp"

#include <iostream>

namespace netbox::cli {

void add_policy_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("policy", "policy (not implemented yet)");
  sub->allow_extras();
  sub->callback([&rc] {
    std::cerr << "netbox policy: not implemented yet\n";
    rc = 1;
  });
}

}  // namespace netbox::cli
