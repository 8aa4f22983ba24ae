// `netbox gc`: remove what launchers that died without cleaning up left behind.
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/audit/close_dead.hpp"
#include "netbox/audit/location.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/writer.hpp"
#include "netbox/launcher/gc.hpp"
#include "netbox/launcher/launch.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace netbox::cli {
namespace {

// When process `pid` started, from /proc (its start in ticks after boot, and the boot
// time); nullopt: no such process, or one that has exited and waits to be reaped.
std::optional<audit::Clock::time_point> process_start(std::int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  // The command's name is in parentheses and may hold anything: fields count from the last ')'.
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  rest >> field;  // the state: a zombie (its parent, the launcher, died) is gone too
  if (field == "Z" || field == "X") return std::nullopt;
  for (int i = 4; i < 22 && rest >> field; ++i) {
  }
  unsigned long long ticks = 0;
  if (!(rest >> ticks)) return std::nullopt;
  std::ifstream proc_stat("/proc/stat");
  long long btime = 0;
  for (std::string key; proc_stat >> key;)
    if (key == "btime" && proc_stat >> btime) break;
  return audit::Clock::time_point(std::chrono::seconds(btime)) +
         std::chrono::milliseconds(ticks * 1000 / static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK)));
}

// A launch is alive while the process its row names (the namespace's init) runs and
// started before the row did: a later process with that pid is another one.
bool launch_alive(std::int64_t pid, audit::Clock::time_point started) {
  const auto start = process_start(pid);
  return start && *start <= started + std::chrono::seconds(2);
}

}  // namespace

void add_gc_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("gc", "Remove veths, nftables tables, cgroups and leases of launchers that are gone");
  struct GcArgs {
    bool quiet = false;
    std::string audit_db;
  };
  auto cmd = std::make_shared<Bound<GcArgs>>(*sub);
  cmd->flags.flag("--quiet,-q", cmd->args.quiet, "Print nothing when all is well");
  cmd->flags.option("--audit-db,--db", cmd->args.audit_db,
                    "Audit database whose rows of dead launches to close (default: the default store, if it exists)");
  sub->callback([&rc, cmd] {
    // What it removes belongs to root (links, nftables tables, cgroups, /run/netbox): run
    // without root it could remove nothing and would only seem to have found nothing.
    if (::geteuid() != 0) {
      std::cerr << "netbox gc: must run as root (it removes veths, nftables tables, cgroups and leases in "
                   "/run/netbox); try: sudo netbox gc\n";
      rc = 1;
      return;
    }
    try {
      auto report = launcher::collect_garbage("/run/netbox");
      for (const auto& item : report.removed) std::cout << "removed " << item << "\n";
      // The audit rows the dead launches left open: their agents rows and requests.
      const std::filesystem::path db = cmd->args.audit_db.empty() ? audit::default_db_path() : std::filesystem::path(cmd->args.audit_db);
      std::size_t closed = 0;
      if (audit::is_postgresql(db.native())) {
        std::cerr << "netbox gc: --audit-db " << db.native() << ": a PostgreSQL store's rows are its proxies' to close\n";
        rc = 2;
        return;
      }
      if (std::error_code ec; !cmd->args.audit_db.empty() || std::filesystem::exists(db, ec))
        for (const auto& a : audit::close_dead_agents(db, audit::default_proxy_id(), launch_alive)) {
          std::cout << "closed agent " << a.name << " (pid " << a.pid << ", " << a.requests
                    << " open requests) in " << db.string() << "\n";
          ++closed;
        }
      if (report.removed.empty() && closed == 0 && !cmd->args.quiet) std::cout << "nothing to remove\n";
      rc = 0;
    } catch (const launcher::LaunchError& e) {
      std::cerr << "netbox gc: " << e.what() << "\n";
      rc = 1;
    } catch (const std::exception& e) {
      std::cerr << "netbox gc: " << e.what() << "\n";
      rc = 1;
    }
  });
}

}  // namespace netbox::cli
