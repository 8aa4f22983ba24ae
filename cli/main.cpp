// `netbox`: dispatches to the subcommands in this folder.
#include "commands.hpp"

#include <iostream>

namespace {

// "netbox", "netbox launch", "netbox policy check": the deepest subcommand parsed so far.
std::string command_path(const CLI::App& app) {
  std::string path = "netbox";
  const CLI::App* at = &app;
  for (;;) {
    const auto subs = at->get_subcommands();
    if (subs.empty()) return path;
    at = subs.front();
    path += " " + at->get_name();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netbox: run AI agents behind an auditing egress proxy, confined to their own network namespace"};
  const std::string version = std::string("netbox ") + NETBOX_VERSION + " (commit " + NETBOX_COMMIT + ")";
  app.set_version_flag("--version", version);
  app.require_subcommand(0, 1);  // checked below, so unknown flags are named first
  app.fallthrough(false);

  int rc = 0;
  netbox::cli::add_proxy_command(app, rc);
  netbox::cli::add_launch_command(app, rc);
  netbox::cli::add_audit_command(app, rc);
  netbox::cli::add_policy_command(app, rc);
  netbox::cli::add_gc_command(app, rc);
  app.add_subcommand("version", "Print the version and the commit it was built from")->callback([&version] {
    std::cout << version << "\n";
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line with the reason and where to look, exit 2 (usage error): the subcommand the
    // mistake is in, and its own --help.
    const std::string where = command_path(app);
    std::cerr << where << ": " << e.what() << "\nRun '" << where << " --help' for usage.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "netbox: " << e.what() << "\n";
    return 1;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "netbox: a subcommand is required (proxy, launch, audit, policy, gc, version)\n"
                 "Run 'netbox --help' for usage.\n";
    return 2;
  }
  return rc;
}
