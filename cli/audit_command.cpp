// `netbox audit [filters]` lists requests; `netbox audit summary [filters]` totals them per
// agent and host. Both only read the database, so they run beside a live proxy.
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/audit/decision.hpp"
#include "netbox/audit/location.hpp"
#include "netbox/audit/prune.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/spool_summary.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/writer.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace netbox::cli {
namespace {

struct AuditArgs {
  std::string db = audit::default_db_path().string();
  std::string agent;
  std::string decision;
  std::string host;
  std::string exe;
  std::string since;
  long long limit = 100;
  std::string format = "table";
  std::string spool;  // empty: the default one of this host's proxy id, with a PostgreSQL --db
};

// The same filters on `audit` and on `audit summary`, bound to the same values, so they may
// come before or after the word "summary".
void add_filters(FlagTable& cmd, AuditArgs& a) {
  cmd.option("--audit-db,--db", a.db,
             "Audit database to read: a file or postgresql://USER@HOST:PORT/DB (default: where netbox proxy and "
             "launch write it, /var/lib/netbox/audit.db as root, else $XDG_STATE_HOME/netbox/audit.db)");
  cmd.option("--agent", a.agent, "Only requests of this agent");
  // The values in the type, {a,b}, as CLI11 shows a checked choice: the shell completions
  // read them from there (the value itself is checked where the filter is built).
  std::string decisions;
  for (const auto d : audit::kDecisions) decisions += (decisions.empty() ? "" : ",") + std::string(d);
  cmd.option("--decision", a.decision, "Only this decision (what the row's decision column holds)")
      ->type_name("TEXT:{" + decisions + "}");
  cmd.option("--host", a.host, "Only hosts matching this glob, e.g. '*.example.com' (case-sensitive)");
  cmd.option("--exe", a.exe,
             "Only requests whose connection a process of this executable opened: a path as the agent sees it, "
             "or a file name in any folder (e.g. curl); 'unknown' for those not found");
  cmd.option("--since", a.since, "Only newer requests: 30s, 15m, 2h, 1d, 1w or a timestamp (2026-11-22T04:00:00Z)");
  cmd.option("--limit", a.limit, "At most N rows, newest first (summary: the N busiest agent/host pairs); 0 for all")
      ->capture_default_str();
  cmd.option("--audit-spool", a.spool,
             "A proxy's local spool (its --audit-spool) to report on: rows in it are not in the PostgreSQL store yet "
             "(default with a postgresql:// --db: this host's default spool, if there is one)");
  cmd.option("--format", a.format, "Output: table, json or csv")
      ->type_name("TEXT:{table,json,csv}")
      ->capture_default_str();
}

audit::Filter to_filter(const AuditArgs& a) {
  audit::Filter f;
  if (!a.agent.empty()) f.agent = a.agent;
  if (!a.decision.empty()) {
    try {
      f.decision = audit::parse_decision(a.decision);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--decision ") + e.what());
    }
  }
  if (!a.host.empty()) f.host_glob = a.host;
  if (!a.exe.empty()) f.exe = a.exe;
  f.since = since_flag(a.since);
  if (a.limit < 0) throw UsageError("--limit " + std::to_string(a.limit) + " is negative; use 0 for all rows");
  f.limit = static_cast<std::size_t>(a.limit);
  if (a.format != "table" && a.format != "json" && a.format != "csv")
    throw UsageError("--format '" + a.format + "' is not one of table, json, csv");
  return f;
}

// Rows a spool holds are not in the store being read: said on stderr, so that the output
// itself stays the store's rows (scripts read it), and said before them.
void report_spool(const AuditArgs& a) {
  if (a.spool.empty() && !audit::is_postgresql(a.db)) return;
  const std::filesystem::path path = a.spool.empty() ? audit::default_spool_path(audit::default_proxy_id()) : std::filesystem::path(a.spool);
  const auto held = audit::read_spool_summary(path);
  if (!held) {
    if (!a.spool.empty()) throw UsageError("--audit-spool " + a.spool + ": no such file");
    return;
  }
  if (held->items == 0) return;
  std::cerr << "netbox audit: the local spool " << path.string() << " holds " << held->rows
            << " request rows (" << held->bytes << " bytes) not yet shipped to the PostgreSQL store\n";
}

int run_audit(const CLI::App& cmd, const AuditArgs& a, bool summary) {
  return run_reporting(cmd, [&] {
    const audit::Filter filter = to_filter(a);
    report_spool(a);
    require_db(a.db);
    if (summary) std::cout << audit::format_summary(audit::summarize(a.db, filter), a.format);
    else std::cout << audit::format_requests(audit::query_requests(a.db, filter), a.format);
    std::cout.flush();
    return 0;
  });
}

struct PruneArgs {
  std::string db = audit::default_db_path().string();
  std::string older_than;
  bool vacuum = false;
  std::string signing_key;
};

int run_prune(const CLI::App& cmd, const PruneArgs& a) {
  return run_reporting(cmd, [&] {
    std::chrono::seconds age{};
    try {
      age = audit::parse_duration(a.older_than);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--older-than ") + e.what());
    }
    require_db(a.db);
    const auto n = audit::prune(a.db, audit::Clock::now() - age, a.vacuum, a.signing_key);
    std::cout << "pruned " << n.requests << " requests, " << n.events << " events and " << n.agents
              << " agents older than " << a.older_than << (a.vacuum ? "; vacuumed" : "") << "\n";
    return 0;
  });
}

}  // namespace

void add_audit_command(CLI::App& app, int& rc) {
  // `audit` and `audit summary` take the same filters into the same values.
  struct Command {
    Command(CLI::App& audit, CLI::App& summary, CLI::App& prune)
        : flags(audit), summary_flags(summary), prune_flags(prune) {}
    AuditArgs args;
    PruneArgs prune_args;
    FlagTable flags, summary_flags, prune_flags;
  };
  auto* sub = app.add_subcommand("audit", "Read the audit database: requests newest first, or a summary");
  sub->require_subcommand(0, 1);
  auto* summary = sub->add_subcommand("summary", "Allowed, denied, reported and bytes per agent and host");
  auto* prune = sub->add_subcommand("prune", "Remove requests, events and ended agents older than a duration "
                                             "(recorded as an audit_prune event); safe beside a live proxy");
  auto cmd = std::make_shared<Command>(*sub, *summary, *prune);
  add_audit_tables_command(*sub, rc);
  add_filters(cmd->flags, cmd->args);
  add_filters(cmd->summary_flags, cmd->args);
  auto& p = cmd->prune_flags;
  p.option("--audit-db,--db", cmd->prune_args.db, "Audit database (default: the same as netbox audit's)");
  p.option("--older-than", cmd->prune_args.older_than, "Age of what goes: 30d, 12h, 2w ...")->required();
  p.flag("--vacuum", cmd->prune_args.vacuum, "Then VACUUM and truncate the WAL so the file shrinks");
  p.option("--audit-signing-key", cmd->prune_args.signing_key,
           "Ed25519 private key (PEM) signing the audit_prune event's chain link, as the proxy's");
  add_audit_verify_command(*sub, rc);
  prune->callback([&rc, cmd, prune] { rc = run_prune(*prune, cmd->prune_args); });
  // The parent's callback runs after its subcommand was parsed, so one place decides.
  sub->callback([&rc, cmd, sub, summary] {
    for (const auto* parsed : sub->get_subcommands())
      if (parsed != summary) return;  // prune, events, agents, verify: each its own callback
    rc = run_audit(summary->parsed() ? *summary : *sub, cmd->args, summary->parsed());
  });
}

}  // namespace netbox::cli
