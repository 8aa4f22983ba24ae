// `netbox policy check FILE|- [--host H [--port P] [--agent A] [--address IP] [--expect V]]
// [--format text|json]`: validates a policy file (every mistake at once), and optionally
// shows the decision for one destination; with --expect it is a CI gate.
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::cli {
namespace {

struct CheckOptions {
  std::string file;
  std::string host;
  int port = 0;
  std::string agent;
  std::string address;
  std::string expect;  // "", "allow" or "deny"
  std::string format = "text";
  bool explain_profiles = false;  // --explain: every profile after merging
};

// One step of a decision: the name, then each address it resolves to.
struct Step {
  std::string stage;  // "name", "address 1.2.3.4", "address 1.2.3.4 (resolve pin)"
  policy::Decision decision;
};

// How the proxy would decide one destination: the name first, then each address (the one
// given with --address, else the policy's own `resolve` pins). `complete` is false when
// the verdict still depends on what DNS answers.
struct Explanation {
  std::string host;
  std::uint16_t port = 0;
  std::vector<Step> steps;
  bool complete = true;
  bool agent_has_profile = true;
  // What the agent would see: denied if any step denies, else the last step's verdict.
  policy::Verdict verdict() const {
    for (const auto& s : steps)
      if (!s.decision.lets_through()) return policy::Verdict::deny;
    return steps.empty() ? policy::Verdict::deny : steps.back().decision.verdict;
  }
};

Explanation explain(const policy::Policy& pol, const CheckOptions& o) {
  auto parsed = policy::parse_host(o.host);
  if (!parsed) throw UsageError("--host '" + o.host + "': " + parsed.error.message);
  const policy::Host& host = *parsed.host;
  Explanation e;
  e.host = host.name;
  e.port = static_cast<std::uint16_t>(o.port);
  e.agent_has_profile = o.agent.empty() || pol.agents.count(o.agent) > 0;
  const policy::Profile& profile = pol.profile_for(o.agent.empty() ? "anonymous" : o.agent);

  std::optional<boost::asio::ip::address> given;
  if (!o.address.empty()) {
    boost::system::error_code ec;
    given = boost::asio::ip::make_address(o.address, ec);
    if (ec) throw UsageError("--address '" + o.address + "' is not an IP address");
  }
  auto name = policy::decide_name(profile, host, e.port);
  e.steps.push_back({host.is_ip() && !given ? "address" : "name", name});
  if (!name.lets_through() || host.is_ip()) return e;
  if (given) {
    e.steps.push_back({"address " + given->to_string(), policy::decide_address(profile, host, e.port, *given)});
    return e;
  }
  auto pin = pol.pins.find(host.name);
  if (pin == pol.pins.end()) {
    e.complete = false;
    return e;
  }
  for (const auto& a : pin->second)
    e.steps.push_back({"address " + a.to_string() + " (resolve pin)", policy::decide_address(profile, host, e.port, a)});
  return e;
}

void print_text(const Explanation& e, const CheckOptions& o) {
  if (!e.agent_has_profile) std::cout << "agent " << o.agent << " has no profile in agents; the top-level keys apply\n";
  std::cout << "destination " << e.host << " port " << e.port << "\n";
  for (const auto& s : e.steps) {
    std::cout << s.stage << ": " << policy::to_string(s.decision.verdict) << "\n";
    if (!s.decision.rule.empty()) std::cout << "  rule:   " << s.decision.rule << "\n";
    std::cout << "  reason: " << s.decision.reason << "\n";
  }
  if (!e.complete)
    std::cout << "(the addresses it resolves to are checked too: internal ranges, deny and allow networks;"
                 " pass --address IP to see that step)\n";
}

nlohmann::json problems_json(const policy::PolicyError& err) {
  auto out = nlohmann::json::array();
  for (const auto& p : err.problems())
    out.push_back({{"file", p.file}, {"line", p.line}, {"column", p.column}, {"path", p.json_path},
                   {"message", p.message}});
  return out;
}

nlohmann::json explanation_json(const Explanation& e) {
  auto steps = nlohmann::json::array();
  for (const auto& s : e.steps)
    steps.push_back({{"stage", s.stage},
                     {"verdict", policy::to_string(s.decision.verdict)},
                     {"rule", s.decision.rule},
                     {"reason", s.decision.reason}});
  return {{"host", e.host},
          {"port", e.port},
          {"verdict", policy::to_string(e.verdict())},
          {"complete", e.complete},
          {"agent_has_profile", e.agent_has_profile},
          {"steps", steps}};
}

policy::Policy load(const std::string& file) {
  if (file != "-") return policy::load_policy_file(file);
  std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  return policy::parse_policy(text, "<stdin>");
}

int check(const CLI::App& cmd, const CheckOptions& o) {
  const bool json = o.format == "json";
  nlohmann::json out = {{"file", o.file == "-" ? "<stdin>" : o.file}};
  policy::Policy pol;
  try {
    pol = load(o.file);
  } catch (const policy::PolicyError& e) {
    if (json) {
      out["ok"] = false;
      out["errors"] = problems_json(e);
      std::cout << out.dump(2) << "\n";
    } else {
      std::cerr << e.what() << "\n";
    }
    return 2;
  }
  out["ok"] = true;
  out["digest"] = pol.digest;
  if (o.host.empty()) {
    if (json) std::cout << out.dump(2) << "\n";
    else std::cout << policy::summarize(pol) << (o.explain_profiles ? "\n" + policy::explain_profiles(pol) : "");
    return 0;
  }
  Explanation e;
  try {
    e = explain(pol, o);
  } catch (const UsageError& u) {
    return usage_error(cmd, u.what());
  }
  if (json) {
    out["decision"] = explanation_json(e);
    std::cout << out.dump(2) << "\n";
  } else {
    print_text(e, o);
  }
  if (o.expect.empty()) return 0;
  // "report" lets the request through, so it counts as allow; a name whose addresses are
  // still unknown passes --expect allow only on the name, which the output says.
  const bool allowed = e.verdict() != policy::Verdict::deny;
  if (allowed == (o.expect == "allow")) return 0;
  std::cerr << "netbox policy check: expected " << o.expect << ", but " << e.host << " port " << e.port << " is "
            << policy::to_string(e.verdict()) << "\n";
  return 1;
}

}  // namespace

void add_policy_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("policy", "Validate a policy file and explain its decisions");
  sub->require_subcommand(1);
  auto* chk = sub->add_subcommand("check", "Check a policy file: exit 0 and a summary if it is good, "
                                           "exit 2 and FILE:LINE:COL: /json/path: what is wrong (every mistake) if not");
  auto cmd = std::make_shared<Bound<CheckOptions>>(*chk);
  auto& o = cmd->args;
  auto& f = cmd->flags;
  f.option("FILE", o.file, "The policy file (JSON, version 1); - reads standard input")->required();
  auto* host = f.option("--host", o.host, "Also show the decision for this destination host");
  f.option("--port", o.port, "Destination port for --host (default 443)")->check(CLI::Range(1, 65535))->needs(host);
  f.option("--agent", o.agent, "Decide as this agent (its agents.NAME profile)")->needs(host);
  f.option("--address", o.address, "Decide on this resolved address too")->needs(host);
  f.option("--expect", o.expect, "Exit 1 unless the decision for --host is this: allow or deny")
      ->check(CLI::IsMember({"allow", "deny"}))
      ->needs(host);
  f.flag("--explain", o.explain_profiles,
         "Also print every profile as it applies after merging: limits, budgets, destinations, guardian");
  f.option("--format", o.format, "Output: text or json (errors too: {\"ok\": false, \"errors\": [...]})")
      ->check(CLI::IsMember({"text", "json"}));
  chk->callback([cmd, chk, &rc] {
    if (!cmd->args.host.empty() && cmd->args.port == 0) cmd->args.port = 443;
    rc = check(*chk, cmd->args);
  });
}

}  // namespace netbox::cli
