// `netbox policy check FILE [--host H --port P [--agent A] [--address IP]]`:
// validates a policy file, and optionally shows the decision for one destination.
#include "commands.hpp"

#include "netbox/policy/decide.hpp"
#include "netbox/policy/load.hpp"

#include <iostream>
#include <memory>
#include <optional>
#include <string>

namespace netbox::cli {
namespace {

struct CheckOptions {
  std::string file;
  std::string host;
  int port = 0;
  std::string agent;
  std::string address;
};

void print_decision(const policy::Decision& d, const std::string& stage) {
  std::cout << stage << ": " << policy::to_string(d.verdict) << "\n";
  if (!d.rule.empty()) std::cout << "  rule:   " << d.rule << "\n";
  std::cout << "  reason: " << d.reason << "\n";
}

// Prints the decision the proxy would make: on the name first, then on each address
// (the one given with --address, else the policy's own `resolve` pins).
int explain(const policy::Policy& pol, const CheckOptions& o) {
  auto parsed = policy::parse_host(o.host);
  if (!parsed) {
    std::cerr << "netbox policy check: --host '" << o.host << "': " << parsed.error.message << "\n";
    return 2;
  }
  const policy::Host& host = *parsed.host;
  const policy::Profile& profile = pol.profile_for(o.agent.empty() ? "anonymous" : o.agent);
  if (!o.agent.empty() && !pol.agents.count(o.agent))
    std::cout << "agent " << o.agent << " has no profile in agents; the top-level keys apply\n";
  auto port = static_cast<uint16_t>(o.port);
  std::cout << "destination " << host.name << " port " << port << "\n";

  if (!o.address.empty()) {
    boost::system::error_code ec;
    auto addr = boost::asio::ip::make_address(o.address, ec);
    if (ec) {
      std::cerr << "netbox policy check: --address '" << o.address << "' is not an IP address\n";
      return 2;
    }
    auto d = policy::decide_name(profile, host, port);
    print_decision(d, "name");
    if (d.lets_through() && !host.is_ip()) print_decision(policy::decide_address(profile, host, port, addr), "address " + addr.to_string());
    return 0;
  }
  auto d = policy::decide_name(profile, host, port);
  print_decision(d, host.is_ip() ? "address" : "name");
  if (!d.lets_through() || host.is_ip()) return 0;
  auto pin = pol.pins.find(host.name);
  if (pin == pol.pins.end()) {
    std::cout << "(the addresses it resolves to are checked too: internal ranges, deny and allow networks;"
                 " pass --address IP to see that step)\n";
    return 0;
  }
  for (const auto& a : pin->second) print_decision(policy::decide_address(profile, host, port, a), "address " + a.to_string() + " (resolve pin)");
  return 0;
}

int check(const CheckOptions& o) {
  policy::Policy pol;
  try {
    pol = policy::load_policy_file(o.file);
  } catch (const policy::PolicyError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (o.host.empty()) {
    std::cout << policy::summarize(pol);
    return 0;
  }
  return explain(pol, o);
}

}  // namespace

void add_policy_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("policy", "Validate a policy file and explain its decisions");
  sub->require_subcommand(1);
  auto opts = std::make_shared<CheckOptions>();
  auto* chk = sub->add_subcommand("check", "Check a policy file: exit 0 and a summary if it is good, "
                                           "exit 2 and FILE:LINE:COL: /json/path: what is wrong if not");
  chk->add_option("FILE", opts->file, "The policy file (JSON, version 1)")->required();
  auto* host = chk->add_option("--host", opts->host, "Also show the decision for this destination host");
  chk->add_option("--port", opts->port, "Destination port for --host")->check(CLI::Range(1, 65535))->needs(host);
  chk->add_option("--agent", opts->agent, "Decide as this agent (its agents.NAME profile)")->needs(host);
  chk->add_option("--address", opts->address, "Decide on this resolved address too")->needs(host);
  chk->callback([opts, &rc] {
    if (!opts->host.empty() && opts->port == 0) opts->port = 443;
    rc = check(*opts);
  });
}

}  // namespace netbox::cli
