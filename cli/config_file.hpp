#pragma once
// A subcommand's config file: a JSON object whose keys are its flags (see FlagTable),
// read as policies are (netbox/policy/json_file.hpp: comments allowed, a key given twice
// refused, every mistake at FILE:LINE:COLUMN).
#include "flag_table.hpp"

#include "netbox/policy/trusted_file.hpp"

#include <string>

namespace netbox::cli {

// Applies the file at `path` to `flags`; returns whether there was one. A missing file is
// skipped unless `required` (it was named with --config), and so is one a user other than
// root may not read. Run as root, the file must belong to one of `owners` and be
// writable by no one else (its folder too): whoever may write it decides what the agent
// or proxy may do. Throws UsageError naming the file for every problem.
bool apply_config_file(FlagTable& flags, const std::string& path, bool required,
                       const std::vector<uid_t>& owners = {0});

}  // namespace netbox::cli
