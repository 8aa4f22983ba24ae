// `netbox audit events` and `netbox audit agents` (issue 27 item 6): the security team's
// view of the store's other tables, with the filters and formats of `netbox audit`.
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/tables.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

namespace netbox::cli {
namespace {

struct TableArgs {
  std::string db = audit::default_db_path().string();
  std::string kind;
  std::string agent;
  std::string since;
  bool running = false;
  long long limit = 100;
  std::string format = "table";
};

int run_table(const CLI::App& cmd, const TableArgs& a, bool events) {
  return run_reporting(cmd, [&] {
    audit::TableFilter f;
    if (!a.kind.empty()) f.kind = a.kind;
    if (!a.agent.empty()) f.agent = a.agent;
    f.running = a.running;
    f.since = since_flag(a.since);
    if (a.limit < 0) throw UsageError("--limit " + std::to_string(a.limit) + " is negative; use 0 for all rows");
    f.limit = static_cast<std::size_t>(a.limit);
    if (a.format != "table" && a.format != "text" && a.format != "json" && a.format != "csv")
      throw UsageError("--format '" + a.format + "' is not one of table (or text), json, csv");
    require_db(a.db);
    std::cout << (events ? audit::format_events(audit::query_events(a.db, f), a.format)
                         : audit::format_agents(audit::query_agents(a.db, f), a.format))
              << std::flush;
    return 0;
  });
}

void common(FlagTable& f, TableArgs& a) {
  f.option("--audit-db,--db", a.db, "Audit database to read (default: netbox audit's)");
  f.option("--since", a.since, "Only newer rows: 30s, 15m, 2h, 1d, 1w or a timestamp (2026-11-22T04:00:00Z)");
  f.option("--limit", a.limit, "At most N rows, newest first; 0 for all")->capture_default_str();
  f.option("--format", a.format, "Output: table (or text), json or csv; json and csv have the same columns")
      ->capture_default_str();
}

}  // namespace

void add_audit_tables_command(CLI::App& audit, int& rc) {
  auto* events = audit.add_subcommand("events", "netbox's events newest first: policy loads and reload failures, "
                                                "exfiltration attempts, audit store errors, guardian actions");
  auto ev = std::make_shared<Bound<TableArgs>>(*events);
  common(ev->flags, ev->args);
  ev->flags.option("--kind", ev->args.kind, "Only events of this kind, e.g. exfiltration_attempt");
  events->callback([ev, events, &rc] { rc = run_table(*events, ev->args, true); });

  auto* agents = audit.add_subcommand("agents", "Launched agents newest first: name, pid, mode, start, end and "
                                                "how it ended, command line");
  auto ag = std::make_shared<Bound<TableArgs>>(*agents);
  common(ag->flags, ag->args);
  ag->flags.option("--agent", ag->args.agent, "Only agents of this name");
  ag->flags.flag("--running", ag->args.running, "Only agents whose end is not recorded");
  agents->callback([ag, agents, &rc] { rc = run_table(*agents, ag->args, false); });
}

}  // namespace netbox::cli
