#pragma once
// What every command that reads the audit store shares: the store named by --db checked
// before it is opened, --since read, and one way to end (a usage mistake or a file that is
// not a netbox store exits 2, any other failure 1, each with one line naming the command).
#include "usage.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/policy/load.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace netbox::cli {

// A server: the reader says if it cannot be reached; a password in the address is refused
// (it would be in `ps`) without being repeated. A file: it must exist (never created here).
inline void require_db(const std::string& db) {
  if (audit::is_postgresql(db)) return audit::check_postgresql_address(db, "--db");
  std::error_code ec;
  if (!std::filesystem::exists(db, ec)) throw UsageError("no audit database at " + db + "; pass --db");
}

// --since's value (empty: not given), or a UsageError naming the flag.
inline std::optional<audit::Clock::time_point> since_flag(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return audit::parse_since(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--since ") + e.what());
  }
}

template <class Body>
int run_reporting(const CLI::App& cmd, Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    return usage_error(cmd, e.what());
  } catch (const policy::PolicyError& e) {  // a --policy file the command reads beside the store
    std::cerr << command_path(cmd) << ": --policy: " << e.what() << "\n";
    return 2;
  } catch (const audit::DatabaseRejected& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace netbox::cli
