// `netbox gc`: not built yet (see the issue that owns it).
#include "commands.hpp"

#include <iostream>

namespace netbox::cli {

void add_gc_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("gc", "gc (not implemented yet)");
  sub->allow_extras();
  sub->callback([&rc] {
    std::cerr << "netbox gc: not implemented yet\n";
    rc = 1;
  });
}

}  // namespace netbox::cli
