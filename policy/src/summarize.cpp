#include "netbox/policy/load.hpp"

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

}  // namespace

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
  const Limits& l = b.limits;
  o << "  limits:         " << l.max_connections << " connections, " << l.max_connections_per_agent << " per agent, "
    << l.max_connections_per_host << " per host, connect timeout " << l.connect_timeout.count()
    << " ms, dial budget " << l.effective_dial_budget().count() << " ms, idle timeout " << l.idle_timeout.count() << " ms, header timeout " << l.header_timeout.count()
    << " ms\n";
  o << "  agents:         ";
  if (policy.agents.empty()) o << "(none)";
  first = true;
  for (const auto& [name, profile] : policy.agents) {
    o << (first ? "" : "; ") << name << " (overrides " << strings(profile.overrides) << ")";
    first = false;
  }
  o << "\n";
  return o.str();
}

}  // namespace netbox::policy
