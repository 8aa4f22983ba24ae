#pragma once
// A subcommand's config file: a JSON object whose keys are its flags (see FlagTable).
#include "flag_table.hpp"

#include <string>

namespace netbox::cli {

// Applies the file at `path` to `flags`; returns whether there was one. A missing file is
// skipped unless `required` (it was named with --config), and so is one a user other than
// root may not read. Run as root, the file must be root's and writable by no one
// else: it names the policy and the audit store, so whoever may write it decides what
// the proxy lets through. Throws UsageError naming the file for every problem.
bool apply_config_file(FlagTable& flags, const std::string& path, bool required);

}  // namespace netbox::cli
