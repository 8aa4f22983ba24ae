// `netbox policy check FILE|- [--host H [--port P] [--agent A] [--address IP]
// [--method M --path P [--body FILE [--content-type T]]] [--expect V]] [--explain]
// [--format text|json]`: validates a policy file (every mistake at once), and optionally
// shows the decision for one destination, or one request to it, body included; a refused
// request and --expect make it a CI gate.
#include "commands.hpp"
#include "flag_table.hpp"
#include "policy_rules_listing.hpp"

#include "netbox/policy/body_rules.hpp"
#include "netbox/policy/decide.hpp"
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/load.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
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
  std::string method;
  std::string path;
  std::string body_file;
  std::string content_type;
  bool explain = false;
  std::string format = "text";
};

// One step of a decision: the name, then each address it resolves to.
struct Step {
  std::string stage;  // "name", "address 1.2.3.4", "address 1.2.3.4 (resolve pin)", "request", "body"
  policy::Decision decision;
  std::string where;   // body: the JSON pointer or ref that failed
  std::string answer;  // body: what the agent would get (a JSON-RPC error body), when JSON
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
  std::string note;  // what the steps do not show
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
  e.steps.push_back({host.is_ip() && !given ? "address" : "name", name, "", ""});
  if (!name.lets_through() || host.is_ip()) return e;
  if (given) {
    e.steps.push_back({"address " + given->to_string(), policy::decide_address(profile, host, e.port, *given), "", ""});
    return e;
  }
  auto pin = pol.pins.find(host.name);
  if (pin == pol.pins.end()) {
    e.complete = false;
    return e;
  }
  for (const auto& a : pin->second)
    e.steps.push_back({"address " + a.to_string() + " (resolve pin)", policy::decide_address(profile, host, e.port, a), "", ""});
  return e;
}

std::string read_body(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("--body '" + file + "': cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The request after the host decision, as the proxy decides it: on port 80 plain HTTP, on
// any other port HTTPS, whose tunnel must be inspected for a host rules name; then the
// method and canonical path against `rules`; then the body, when the rule checks it.
void explain_request(const policy::Policy& pol, const CheckOptions& o, Explanation& e) {
  if (e.verdict() == policy::Verdict::deny) return;
  const policy::Profile& profile = pol.profile_for(o.agent.empty() ? "anonymous" : o.agent);
  const policy::Decision host = e.steps.back().decision;
  const policy::Admitted admitted{e.host, e.port, host};
  if (e.port != 80) {
    const auto tunnel = policy::decide_tunnel(profile, admitted, policy::Carried::opaque);
    // Refused, or reported in report mode: the decision is no longer the host's.
    if (tunnel.refused() || tunnel.decision.rule != host.rule)
      e.steps.push_back({"https tunnel", tunnel.decision, "", ""});
    else if (tunnel.inspect)
      e.steps.push_back({"https tunnel", {host.verdict, "inspect", e.host + " is inspected: netbox terminates its TLS "
                                                                   "and decides each request inside"}, "", ""});
    if (tunnel.refused()) return;
  }
  const auto request = policy::decide_request(profile, admitted, o.method, o.path, policy::BodyChecks::caller_checks);
  policy::Decision shown = request.decision;
  if (shown.reason.empty())
    shown.reason = shown.rule.empty() ? "no rule names " + e.host + ": the host decision stands"
                                      : o.method + " " + request.path + " matches " + shown.rule;
  e.steps.push_back({"request " + o.method + " " + (request.path.empty() ? o.path : request.path), shown, "", ""});
  if (request.refused() || !request.body_rule) {
    if (!o.body_file.empty())
      e.note = "no rule that allows this request checks its body, so --body changes nothing";
    return;
  }
  const policy::RequestRule& rule = *request.body_rule;
  if (o.body_file.empty()) {
    e.note = rule.cite() + " checks the body too: pass --body FILE to see that step";
    return;
  }
  const std::string content_type = !o.content_type.empty() ? o.content_type
                                   : rule.body->git          ? "application/x-git-receive-pack-request"
                                                             : "application/json";
  const auto body = policy::check_body(rule, content_type, read_body(o.body_file), profile.mode);
  policy::Decision shown_body = body.decision;
  if (shown_body.reason.empty()) shown_body = {policy::Verdict::allow, rule.cite(), "the body passes " + rule.cite()};
  e.steps.push_back({"body", shown_body, body.where, body.content_type == "application/json" ? body.answer : ""});
}

void print_text(const Explanation& e, const CheckOptions& o) {
  if (!e.agent_has_profile) std::cout << "agent " << o.agent << " has no profile in agents; the top-level keys apply\n";
  std::cout << "destination " << e.host << " port " << e.port << "\n";
  for (const auto& s : e.steps) {
    std::cout << s.stage << ": " << policy::to_string(s.decision.verdict) << "\n";
    if (!s.decision.rule.empty()) std::cout << "  rule:   " << s.decision.rule << "\n";
    std::cout << "  reason: " << s.decision.reason << "\n";
    if (!s.where.empty()) std::cout << "  at:     " << s.where << "\n";
    if (!s.answer.empty()) std::cout << "  answer: " << s.answer << "\n";
  }
  if (!e.note.empty()) std::cout << "(" << e.note << ")\n";
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
  {
    nlohmann::json step = {{"stage", s.stage},
                           {"verdict", policy::to_string(s.decision.verdict)},
                           {"rule", s.decision.rule},
                           {"reason", s.decision.reason}};
    if (!s.where.empty()) step["at"] = s.where;
    if (!s.answer.empty()) step["answer"] = nlohmann::json::parse(s.answer);
    steps.push_back(step);
  }
  return {{"host", e.host},
          {"port", e.port},
          {"verdict", policy::to_string(e.verdict())},
          {"complete", e.complete},
          {"agent_has_profile", e.agent_has_profile},
          {"note", e.note},
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
  // The profile names, for `--profile` and `--agent` (the shell completions read them here).
  out["agents"] = nlohmann::json::array();
  for (const auto& [name, profile] : pol.agents) out["agents"].push_back(name);
  if (o.explain) {
    if (json) out["rules"] = rules_listing_json(pol, o.agent);
    else print_rules_listing(std::cout, pol, o.agent);
  }
  if (o.host.empty()) {
    if (json) std::cout << out.dump(2) << "\n";
    else if (o.explain) std::cout << policy::explain_profiles(pol);
    else std::cout << policy::summarize(pol);
    return 0;
  }
  Explanation e;
  try {
    e = explain(pol, o);
    if (!o.method.empty()) explain_request(pol, o, e);
  } catch (const UsageError& u) {
    return usage_error(cmd, u.what());
  }
  if (json) {
    out["decision"] = explanation_json(e);
    std::cout << out.dump(2) << "\n";
  } else {
    print_text(e, o);
  }
  // A request is a gate by itself: exit 1 when it would be refused.
  if (o.expect.empty()) return !o.method.empty() && e.verdict() == policy::Verdict::deny ? 1 : 0;
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
  auto* sub = app.add_subcommand("policy", "Validate a policy file, explain its decisions, publish it to a fleet");
  sub->require_subcommand(1);
  auto* chk = sub->add_subcommand("check", "Check a policy file: exit 0 and a summary if it is good, "
                                           "exit 2 and FILE:LINE:COL: /json/path: what is wrong (every mistake) if not");
  auto cmd = std::make_shared<Bound<CheckOptions>>(*chk);
  auto& o = cmd->args;
  auto& f = cmd->flags;
  f.option("FILE", o.file, "The policy file (JSON, version 1); - reads standard input")->required();
  auto* host = f.option("--host", o.host, "Also show the decision for this destination host");
  f.option("--port", o.port, "Destination port for --host (default 443)")->check(CLI::Range(1, 65535))->needs(host);
  f.option("--agent", o.agent, "Decide as this agent (its agents.NAME profile); with --explain, list its rules");
  f.option("--address", o.address, "Decide on this resolved address too")->needs(host);
  f.option("--expect", o.expect, "Exit 1 unless the decision for --host is this: allow or deny")
      ->check(CLI::IsMember({"allow", "deny"}))
      ->needs(host);
  auto* method = f.option("--method", o.method, "Also decide a request with this method (with --path): exit 1 if refused")
                     ->needs(host);
  auto* path = f.option("--path", o.path, "The request's path (and query), as the agent sends it")->needs(method);
  method->needs(path);
  auto* body = f.option("--body", o.body_file, "Check this file as the request's body against the rule's jsonrpc, "
                                               "body_schema or git part")
                   ->needs(path);
  f.option("--content-type", o.content_type, "The body's content type (default: what the rule reads: "
                                             "application/json, or git's push type)")
      ->needs(body);
  f.flag("--explain", o.explain,
         "List every profile as it applies after merging (limits, budgets, destinations, guardian) and each "
         "host's rules with their jsonrpc, body_schema and git parts");
  f.option("--format", o.format, "Output: text or json (errors too: {\"ok\": false, \"errors\": [...]})")
      ->check(CLI::IsMember({"text", "json"}));
  add_policy_suggest_command(*sub, rc);
  add_policy_push_command(*sub, rc);
  chk->callback([cmd, chk, &rc] {
    if (!cmd->args.agent.empty() && cmd->args.host.empty() && !cmd->args.explain) {
      rc = usage_error(*chk, "--agent needs --host or --explain");
      return;
    }
    if (!cmd->args.host.empty() && cmd->args.port == 0) cmd->args.port = 443;
    rc = check(*chk, cmd->args);
  });
}

}  // namespace netbox::cli
