#include "netbox/policy/load.hpp"

#include "describe_limits.hpp"

#include <algorithm>
#include <sstream>

namespace netbox::policy {
namespace {

std::string_view mode_text(Mode m) { return m == Mode::enforce ? "enforce" : "report"; }

// Up to `max` entries as written, then "... and N more".
std::string rule_list(const std::vector<Rule>& rules, std::size_t max = 6) {
  if (rules.empty()) return "(none)";
  std::string s;
  for (std::size_t i = 0; i < rules.size() && i < max; ++i) s += (i ? ", " : "") + rules[i].written;
  if (rules.size() > max) s += ", ... and " + std::to_string(rules.size() - max) + " more";
  return s;
}

std::string ports_list(const std::vector<uint16_t>& ports) {
  if (ports.empty()) return "(none: only entries with their own :port allow anything)";
  std::string s;
  for (std::size_t i = 0; i < ports.size(); ++i) s += (i ? ", " : "") + std::to_string(ports[i]);
  return s;
}

std::string strings(const std::vector<std::string>& v) {
  if (v.empty()) return "(none)";
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// "workdir /srv/app, rw /srv/cache, memory 2G, pids 256": the keys given, as flags name them.
std::string sandbox_text(const SandboxSettings& sb) {
  if (sb.empty()) return "(none: netbox launch's flags and defaults)";
  std::string s;
  auto add = [&s](const char* key, const std::string& value) { s += (s.empty() ? "" : ", ") + std::string(key) + " " + value; };
  auto add_list = [&](const char* key, const std::vector<std::string>& v) { add(key, v.empty() ? "(none)" : strings(v)); };
  if (sb.user) add("user", *sb.user);
  if (sb.network) add("network", *sb.network);
  if (sb.workdir) add("workdir", *sb.workdir);
  if (sb.workdir_quota) add("workdir-quota", *sb.workdir_quota);
  if (sb.ro) add_list("ro", *sb.ro);
  if (sb.rw) add_list("rw", *sb.rw);
  if (sb.hide) add_list("hide", *sb.hide);
  if (sb.tmp_size) add("tmp-size", *sb.tmp_size);
  if (sb.memory) add("memory", *sb.memory);
  if (sb.cpus) add("cpus", *sb.cpus);
  if (sb.pids) add("pids", *sb.pids);
  if (sb.allow_degraded) add_list("allow-degraded", *sb.allow_degraded);
  return s;
}

std::string limits_text(const Limits& l) {
  return std::to_string(l.max_connections) + " connections, " + std::to_string(l.max_connections_per_agent) +
         " per agent, " + std::to_string(l.max_connections_per_host) + " per host, connect timeout " +
         std::to_string(l.connect_timeout.count()) + " ms, dial budget " +
         std::to_string(l.effective_dial_budget().count()) + " ms, idle timeout " +
         std::to_string(l.idle_timeout.count()) + " ms, header timeout " + std::to_string(l.header_timeout.count()) +
         " ms";
}

// The budgets, destinations and guardian of a profile, each on its own line; `all`: the
// guardian's content rules also when at their defaults.
void limits_lines(std::ostringstream& o, const Profile& p, const std::string& indent, bool all) {
  const std::string budgets = detail::budgets_text(p.limits);
  if (!budgets.empty() || all)
    o << indent << "budgets:        " << (budgets.empty() ? "(none)" : budgets) << "\n";
  for (const auto& d : p.limits.destinations) o << indent << "                " << detail::destination_text(d) << "\n";
  const auto guardian = detail::guardian_lines(p.guardian, all);
  for (std::size_t i = 0; i < guardian.size(); ++i)
    o << indent << (i == 0 ? "guardian:       " : "                ") << guardian[i] << "\n";
}

}  // namespace

std::string explain_profiles(const Policy& policy) {
  std::ostringstream o;
  auto one = [&](const std::string& title, const Profile& p) {
    o << title << "\n";
    o << "  mode:           " << mode_text(p.mode) << "\n";
    o << "  limits:         " << limits_text(p.limits) << "\n";
    limits_lines(o, p, "  ", true);
  };
  one("top level (anonymous, and agents without a profile)", policy.base);
  for (const auto& [name, profile] : policy.agents)
    one("agents." + name + " (overrides " + strings(profile.overrides) + ")", profile);
  return o.str();
}

std::string summarize(const Policy& policy) {
  std::ostringstream o;
  const Profile& b = policy.base;
  o << policy.source << ": ok (version " << policy.version << ", sha256 " << policy.digest << ")\n";
  o << "  mode:           " << mode_text(b.mode) << "\n";
  o << "  allow:          " << b.allow.size() << (b.allow.size() == 1 ? " entry" : " entries") << ": "
    << rule_list(b.allow) << "\n";
  o << "  deny:           " << b.deny.size() << (b.deny.size() == 1 ? " entry" : " entries") << ": "
    << rule_list(b.deny) << "\n";
  o << "  ports:          " << ports_list(b.ports) << "\n";
  o << "  internal.allow: " << strings(b.internal_allow_written) << "\n";
  o << "  resolve:        ";
  if (policy.pins.empty()) o << "(none)";
  bool first = true;
  for (const auto& [name, addrs] : policy.pins) {
    o << (first ? "" : ", ") << name << " -> ";
    for (std::size_t i = 0; i < addrs.size(); ++i) o << (i ? " " : "") << addrs[i].to_string();
    first = false;
  }
  o << "\n";
  // Only where it matters: names no entry lists, let through by a network entry.
  if (std::any_of(b.allow.begin(), b.allow.end(), [](const Rule& r) { return r.kind == Rule::Kind::network; }))
    o << "  resolve_unlisted_names: "
      << (b.resolve_unlisted_names ? "true (a name no allow entry lists is looked up, and its addresses decide; the "
                                     "lookup carries the name to its domain's servers)"
                                   : "false (a name no allow entry lists is refused before any lookup; network "
                                     "entries allow addresses and pinned names)")
      << "\n";
  const Limits& l = b.limits;
  o << "  limits:         " << limits_text(l) << "\n";
  o << "  sandbox:        " << sandbox_text(b.sandbox) << "\n";
  // Budgets, rates and the guardian (issue 25): shown only where given.
  limits_lines(o, b, "  ", false);
  // TLS inspection: shown only where used, so a policy without it reads as before.
  if (!b.inspect.empty())
    o << "  inspect:        " << b.inspect.size() << (b.inspect.size() == 1 ? " entry" : " entries") << ": "
      << rule_list(b.inspect) << " (needs the netbox CA: netbox ca init)\n";
  for (const RequestRule& r : b.rules)
    o << "  " << (&r == &b.rules.front() ? "rules:          " : "                ") << (r.allow ? "allow " : "deny  ")
      << r.cite() << "\n";
  for (const Credential& c : b.credentials) {
    std::string hosts;
    for (const Rule& h : c.hosts) hosts += (hosts.empty() ? "" : ", ") + h.written;
    o << "  " << (&c == &b.credentials.front() ? "credentials:    " : "                ") << c.name << ": " << c.header
      << " on " << hosts << ", secret from "
      << (c.secret_env.empty() ? c.secret_file : "$" + c.secret_env);
    std::string vars = c.secret_env.empty() ? "" : "$" + c.secret_env;
    if (!c.env.empty() && c.env != c.secret_env) vars += (vars.empty() ? "$" : " and $") + c.env;
    o << (vars.empty() ? ", no placeholder variable" : ", placeholder in " + vars) << "\n";
  }
  o << "  agents:         ";
  if (policy.agents.empty()) o << "(none)";
  first = true;
  for (const auto& [name, profile] : policy.agents) {
    o << (first ? "" : "; ") << name << " (overrides " << strings(profile.overrides) << ")";
    first = false;
  }
  o << "\n";
  // An agent's sandbox is the top level's with its own keys replaced: shown whole.
  for (const auto& [name, profile] : policy.agents)
    if (std::find(profile.overrides.begin(), profile.overrides.end(), "sandbox") != profile.overrides.end())
      o << "  agents." << name << ".sandbox: " << sandbox_text(profile.sandbox) << "\n";
  // Likewise its budgets and guardian, merged with the top level's.
  for (const auto& [name, profile] : policy.agents) {
    const auto& ov = profile.overrides;
    if (std::find(ov.begin(), ov.end(), "limits") == ov.end() && std::find(ov.begin(), ov.end(), "guardian") == ov.end())
      continue;
    std::ostringstream part;
    limits_lines(part, profile, "    ", false);
    if (!part.str().empty()) o << "  agents." << name << ":\n" << part.str();
  }
  return o.str();
}

}  // namespace netbox::policy
