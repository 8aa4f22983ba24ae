// `netbox gc`: remove what launchers that died without cleaning up left behind.
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/launcher/gc.hpp"
#include "netbox/launcher/launch.hpp"

#include <unistd.h>

#include <iostream>
#include <memory>

namespace netbox::cli {

void add_gc_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("gc", "Remove veths, nftables tables, cgroups and leases of launchers that are gone");
  struct GcArgs {
    bool quiet = false;
  };
  auto cmd = std::make_shared<Bound<GcArgs>>(*sub);
  cmd->flags.flag("--quiet,-q", cmd->args.quiet, "Print nothing when all is well");
  sub->callback([&rc, cmd] {
    // What it removes belongs to root (links, nftables tables, cgroups, /run/netbox): run
    // without root it could remove nothing and would only seem to have found nothing.
    if (::geteuid() != 0) {
      std::cerr << "netbox gc: must run as root (it removes veths, nftables tables, cgroups and leases in "
                   "/run/netbox); try: sudo netbox gc\n";
      rc = 1;
      return;
    }
    try {
      auto report = launcher::collect_garbage("/run/netbox");
      for (const auto& item : report.removed) std::cout << "removed " << item << "\n";
      if (report.removed.empty() && !cmd->args.quiet) std::cout << "nothing to remove\n";
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
