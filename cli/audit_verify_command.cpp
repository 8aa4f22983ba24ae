// `netbox audit verify`: checks the audit chain of every proxy that wrote the store
// (docs/audit.md "Integrity") and names the first row that does not match. Read-only, so
// it runs beside live proxies.
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"
#include "usage.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/verify.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

namespace netbox::cli {
namespace {

struct VerifyArgs {
  std::string db = audit::default_db_path().string();
  std::vector<std::string> verify_keys;  // FILE (every proxy) or PROXY=FILE
};

// --audit-verify-key FILE or PROXY=FILE, any number of times (at most one FILE alone).
audit::VerifyKeys read_verify_keys(const std::vector<std::string>& given) {
  audit::VerifyKeys keys;
  for (const auto& g : given) {
    const auto eq = g.find('=');
    // A path may hold '=' too: a file that exists is a file.
    std::error_code ec;
    const bool whole_file = eq == std::string::npos || std::filesystem::exists(g, ec);
    const std::string proxy = whole_file ? std::string() : g.substr(0, eq);
    const std::filesystem::path file = whole_file ? g : g.substr(eq + 1);
    if (!whole_file && proxy.empty()) throw UsageError("--audit-verify-key " + g + ": no proxy id before '='");
    if (!std::filesystem::exists(file, ec)) throw UsageError("--audit-verify-key " + g + ": no such file " + file.string());
    if (whole_file) {
      if (!keys.every.empty()) throw UsageError("--audit-verify-key " + g + ": a key for every proxy is given twice");
      keys.every = file;
    } else if (!keys.per_proxy.emplace(proxy, file).second) {
      throw UsageError("--audit-verify-key " + g + ": proxy '" + proxy + "' is named twice");
    }
  }
  return keys;
}

// Problems past this many are counted, not listed: the first ones say where it starts.
constexpr std::size_t kShownProblems = 20;

int run_verify(const CLI::App& cmd, const VerifyArgs& a) {
  try {
    require_db(a.db);
    const audit::ChainReport report = audit::verify_chain(a.db, read_verify_keys(a.verify_keys));
    for (const auto& p : report.proxies) std::cout << p << "\n";
    std::cout << report.rows << " rows checked";
    if (report.rows_before_chain > 0) std::cout << "; " << report.rows_before_chain << " rows older than the chain not covered";
    std::cout << "\n";
    for (const auto& n : report.notes) std::cout << "note: " << n << "\n";
    if (report.ok()) {
      std::cout << "audit chain verified\n";
      return 0;
    }
    for (std::size_t i = 0; i < report.problems.size() && i < kShownProblems; ++i)
      std::cout << (i == 0 ? "FIRST MISMATCH: " : "mismatch: ") << report.problems[i] << "\n";
    if (report.problems.size() > kShownProblems)
      std::cout << "... and " << report.problems.size() - kShownProblems << " more\n";
    std::cout << "audit chain verification FAILED (" << report.problems.size() << " problems)\n";
    return 1;
  } catch (const UsageError& e) {
    return usage_error(cmd, e.what());
  } catch (const audit::DatabaseRejected& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // A key that is not one is a configuration error; a store that cannot be read, 1.
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return std::string_view(e.what()).starts_with("--audit-verify-key") ? 2 : 1;
  }
}

}  // namespace

CLI::App* add_audit_verify_command(CLI::App& audit, int& rc) {
  struct Command {
    explicit Command(CLI::App& app) : flags(app) {}
    VerifyArgs args;
    FlagTable flags;
  };
  auto* verify = audit.add_subcommand(
      "verify", "Check the audit chain of every proxy in the store; exit 1 naming the first row that does not match");
  auto cmd = std::make_shared<Command>(*verify);
  cmd->flags.option("--audit-db,--db", cmd->args.db, "Audit database: a file or postgresql://... (default: netbox audit's)");
  cmd->flags.option("--audit-verify-key", cmd->args.verify_keys,
                    "Ed25519 public key (PEM): every batch must then carry a valid signature by --audit-signing-key; "
                    "PROXY=FILE checks that proxy id's chain with its own key (repeat for each; every chain must "
                    "then have a key)");
  verify->callback([&rc, cmd, verify] { rc = run_verify(*verify, cmd->args); });
  return verify;
}

}  // namespace netbox::cli
