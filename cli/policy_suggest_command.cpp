// `netbox policy suggest --db DB --agent NAME [--since S] [--policy FILE]`: a policy
// proposed from what the agent did (typically a `netbox launch --mode report` run), for
// review, then `netbox policy check`, then enforcing (docs/policy.md#learn-then-enforce).
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/policy/load.hpp"
#include "netbox/policy/suggest.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

namespace netbox::cli {
namespace {

struct SuggestArgs {
  std::string db = audit::default_db_path().string();
  std::string agent;
  std::string since;
  std::string policy;
};

std::string read_policy_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("--policy " + file + ": cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int run_suggest(const CLI::App& cmd, const SuggestArgs& a) {
  return run_reporting(cmd, [&] {
    audit::Filter filter;
    filter.agent = a.agent;
    filter.limit = 0;
    filter.since = since_flag(a.since);
    require_db(a.db);
    policy::SuggestInput in;
    in.agent = a.agent;
    in.source = a.db + (a.since.empty() ? std::string() : ", since " + a.since);
    if (!a.policy.empty()) in.base = std::pair{read_policy_text(a.policy), a.policy};
    const auto rows = audit::query_requests(a.db, filter);
    for (const auto& r : rows)
      in.rows.push_back({r.kind, r.host, r.port, r.method, r.path, r.decision, r.rule, r.parent_id != 0, r.count});
    if (rows.empty()) {
      std::cerr << command_path(cmd) << ": no request of agent " << a.agent << " in " << in.source
                << "; nothing to suggest\n";
      return 1;
    }
    std::cout << policy::suggest_policy(in) << std::flush;
    return 0;
  });
}

}  // namespace

void add_policy_suggest_command(CLI::App& policy, int& rc) {
  auto* sub = policy.add_subcommand(
      "suggest", "Print a policy allowing what an agent did (its audit rows, e.g. of a `launch --mode report` run), "
                 "with counts as comments, for review");
  auto cmd = std::make_shared<Bound<SuggestArgs>>(*sub);
  auto& a = cmd->args;
  auto& f = cmd->flags;
  f.option("--audit-db,--db", a.db, "Audit database to read (default: netbox audit's)");
  f.option("--agent", a.agent, "The agent whose requests to learn from")->required();
  f.option("--since", a.since, "Only newer requests: 30s, 15m, 2h, 1d, 1w or a timestamp");
  f.option("--policy", a.policy,
           "The policy the run used: print it with what the run needed beyond it added (to agents.AGENT if it has "
           "that entry) and its \"mode\" removed");
  sub->callback([cmd, sub, &rc] { rc = run_suggest(*sub, cmd->args); });
}

}  // namespace netbox::cli
