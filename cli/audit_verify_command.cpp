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

namespace netbox::cli {
namespace {

struct VerifyArgs {
  std::string db = audit::default_db_path().string();
  std::string verify_key;
};

// Problems past this many are counted, not listed: the first ones say where it starts.
constexpr std::size_t kShownProblems = 20;

int run_verify(const CLI::App& cmd, const VerifyArgs& a) {
  try {
    require_db(a.db);
    if (std::error_code ec; !a.verify_key.empty() && !std::filesystem::exists(a.verify_key, ec))
      throw UsageError("--audit-verify-key " + a.verify_key + ": no such file");
    const audit::ChainReport report = audit::verify_chain(a.db, a.verify_key);
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
  cmd->flags.option("--audit-verify-key", cmd->args.verify_key,
                    "Ed25519 public key (PEM): every batch must then carry a valid signature by --audit-signing-key");
  verify->callback([&rc, cmd, verify] { rc = run_verify(*verify, cmd->args); });
  return verify;
}

}  // namespace netbox::cli
