// `netbox`: dispatches to the subcommands in this folder.
#include "commands.hpp"
#include "usage.hpp"

#include <iostream>

namespace netbox::cli {

std::string_view version() { return NETBOX_VERSION; }
std::string_view commit() { return NETBOX_COMMIT; }

}  // namespace netbox::cli

namespace {

// The deepest subcommand parsed so far: where a parse error is.
const CLI::App& deepest_parsed(const CLI::App& app) {
  const CLI::App* at = &app;
  for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands()) at = subs.front();
  return *at;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"netbox: run AI agents behind an auditing egress proxy, confined to their own network namespace"};
  const std::string version = "netbox " + std::string(netbox::cli::version()) + " (commit " +
                              std::string(netbox::cli::commit()) + ")";
  app.set_version_flag("--version", version);
  app.require_subcommand(0, 1);  // checked below, so unknown flags are named first
  app.fallthrough(false);

  int rc = 0;
  netbox::cli::add_proxy_command(app, rc);
  netbox::cli::add_launch_command(app, rc);
  netbox::cli::add_audit_command(app, rc);
  netbox::cli::add_policy_command(app, rc);
  netbox::cli::add_gc_command(app, rc);
  netbox::cli::add_ca_command(app, rc);
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
    // The subcommand the mistake is in, and its own --help.
    return netbox::cli::usage_error(deepest_parsed(app), e.what());
  } catch (const std::exception& e) {
    std::cerr << "netbox: " << e.what() << "\n";
    return 1;
  }
  if (app.get_subcommands().empty())
    return netbox::cli::usage_error(app, "a subcommand is required (proxy, launch, audit, policy, gc, ca, version)");
  return rc;
}
