// `netbox`: dispatches to the subcommands in this folder.
#include "commands.hpp"
#include "usage.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

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

// The long and short names of `cmd`'s options: what an unknown one is compared against.
std::vector<std::string> option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::App* sub : cmd.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

// What CLI11's "The following arguments were not expected: ..." means, said plainly:
// the first word `cmd` did not take, named as an unknown option, subcommand or argument.
std::string not_expected(const CLI::App& cmd) {
  const auto rest = cmd.remaining();
  if (rest.empty()) return "unexpected arguments";
  const std::string& first = rest.front();
  if (first.size() > 1 && first.front() == '-')
    return "unknown option '" + first + "'" + netbox::cli::near_miss(first, option_names(cmd));
  const auto subs = subcommand_names(cmd);
  if (!subs.empty()) {
    std::string list;
    for (const auto& s : subs) list += (list.empty() ? "" : ", ") + s;
    return "unknown subcommand '" + first + "'" + netbox::cli::near_miss(first, subs) + "; the subcommands are " + list;
  }
  return "unexpected argument '" + first + "'";
}

// `netbox help [SUBCOMMAND...]`: the --help of the command named.
int print_help(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* at = &app;
  std::string path = app.get_name();  // what --help's "Usage:" line names
  for (const auto& w : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == w) next = sub;
    if (next == nullptr) {
      std::string list;
      for (const auto& s : subcommand_names(*at)) list += (list.empty() ? "" : ", ") + s;
      return netbox::cli::usage_error(*at, "no subcommand '" + w + "'" + netbox::cli::near_miss(w, subcommand_names(*at)) +
                                               (list.empty() ? std::string() : "; the subcommands are " + list));
    }
    at = next;
    path += " " + w;
  }
  std::cout << at->get_formatter()->make_help(at, path, CLI::AppFormatMode::Normal);
  return 0;
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
  netbox::cli::add_token_command(app, rc);
  // TEMPORARY (s/ask): the lead wires add_agent_approval_commands into `netbox agent`'s dispatcher.
  netbox::cli::add_agent_approval_commands(
      *app.add_subcommand("agent", "Operate running agents: pending, approve, deny")->require_subcommand(1), rc);
  app.add_subcommand("version", "Print the version and the commit it was built from")->callback([&version] {
    std::cout << version << "\n";
  });
  std::vector<std::string> help_words;
  auto* help = app.add_subcommand("help", "Print the usage of netbox, or of SUBCOMMAND (netbox help audit prune)");
  help->add_option("SUBCOMMAND", help_words, "The subcommand whose usage to print");
  help->callback([&] { rc = print_help(app, help_words); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const CLI::App& where = deepest_parsed(app);
    return netbox::cli::usage_error(where, not_expected(where));
  } catch (const CLI::ParseError& e) {
    // The subcommand the mistake is in, and its own --help.
    return netbox::cli::usage_error(deepest_parsed(app), e.what());
  } catch (const std::exception& e) {
    std::cerr << "netbox: " << e.what() << "\n";
    return 1;
  }
  if (app.get_subcommands().empty())
    return netbox::cli::usage_error(app, "a subcommand is required (proxy, launch, audit, policy, gc, ca, version, help)");
  return rc;
}
