#pragma once
// Where `netbox launch`'s flags get their values when not given: the user's
// ~/.config/netbox/launch.json, then /etc/netbox/launch.json (each a JSON object whose keys
// are the flags, read by the same loader as proxy.json), then the --preset's keys.
#include "flag_table.hpp"

#include "netbox/launcher/launch_options.hpp"

#include <optional>
#include <string>

namespace netbox::cli {

inline constexpr const char* kSystemLaunchConfig = "/etc/netbox/launch.json";

// The user who ran netbox (through sudo: SUDO_UID), whose HOME holds the user's file and
// whose files a preset's "~/" names.
struct InvokingUser {
  uid_t uid = 0;
  std::string home;  // empty when unknown
};
InvokingUser invoking_user();

// "HOME/.config/netbox/launch.json", or empty without a HOME.
std::string user_launch_config(const InvokingUser& user);

// Applies the user's file, then the system's, to the flags not given. Throws UsageError.
void apply_launch_files(FlagTable& flags, const InvokingUser& user);

// Adds the preset's keys to `o` (below every flag and file: its lists come first, so
// a flag's --env wins over the preset's) and its policy when none is given.
void apply_preset(const std::string& name, const InvokingUser& user, launcher::LaunchOptions& o);

}  // namespace netbox::cli
