#pragma once
// The one way a subcommand reports a usage mistake (a flag, a config key, a value): one
// line naming the subcommand and what is wrong, one pointing at its --help, exit 2.
#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::cli {

inline constexpr int kExitUsage = 2;

// Thrown from a subcommand's checks; its message names the flag (or file and key) and value.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "netbox", "netbox proxy", "netbox audit prune": the command `cmd` is.
std::string command_path(const CLI::App& cmd);

// " (did you mean --policy?)" when `given` (up to a '=') is a near miss of one of
// `names`; else empty.
std::string near_miss(std::string_view given, const std::vector<std::string>& names);

// Prints "netbox proxy: MESSAGE" and "Run 'netbox proxy --help' for usage." on stderr;
// returns kExitUsage.
int usage_error(const CLI::App& cmd, std::string_view message);

}  // namespace netbox::cli
