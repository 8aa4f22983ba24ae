// `netbox gc`: remove what launchers that died without cleaning up left behind.
#include "commands.hpp"

#include "netbox/launcher/gc.hpp"
#include "netbox/launcher/launch.hpp"

#include <iostream>

namespace netbox::cli {

void add_gc_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("gc", "Remove veths, nftables tables, cgroups and leases of launchers that are gone");
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet,-q", *quiet, "Print nothing when all is well");
  sub->callback([&rc, quiet] {
    try {
      auto report = launcher::collect_garbage("/run/netbox");
      for (const auto& item : report.removed) std::cout << "removed " << item << "\n";
      if (report.removed.empty() && !*quiet) std::cout << "nothing to remove\n";
      rc = 0;
    } catch (const launcher::LaunchError& e) {
      std::cerr << "netbox gc: " << e.what() << "\n";
      rc = 1;
    } catch (const std::exception& e) {
      std::cerr << "netbox gc: " << e.what() << "\n";
      rc = 1;
    }
  });
}

}  // namespace netbox::cli
