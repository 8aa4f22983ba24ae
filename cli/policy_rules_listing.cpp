#include "policy_rules_listing.hpp"

#include "netbox/policy/body_rules.hpp"
#include "netbox/policy/decide_request.hpp"

#include <algorithm>

namespace netbox::cli {
namespace {

struct Listed {
  std::string name;  // "top level" or "agents.NAME"
  const policy::Profile* profile;
};

std::vector<Listed> profiles(const policy::Policy& pol, const std::string& agent) {
  if (!agent.empty()) return {{pol.agents.count(agent) ? "agents." + agent : "top level", &pol.profile_for(agent)}};
  std::vector<Listed> out{{"top level", &pol.base}};
  for (const auto& [name, p] : pol.agents)
    if (std::find(p.overrides.begin(), p.overrides.end(), "rules") != p.overrides.end())
      out.push_back({"agents." + name, &p});
  return out;
}

// Hosts in the order the rules first name them.
std::vector<std::string> hosts(const policy::Profile& p) {
  std::vector<std::string> out;
  for (const auto& r : p.rules)
    if (std::find(out.begin(), out.end(), r.host.written) == out.end()) out.push_back(r.host.written);
  return out;
}

bool inspected(const policy::Profile& p, const policy::Rule& host) {
  const uint16_t port = host.port.value_or(443);
  // A wildcard's own suffix stands for its names here: inspect covers them alike.
  const std::string name = host.kind == policy::Rule::Kind::wildcard_host ? "x." + host.host : host.host;
  return policy::inspects(p, name, port);
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

nlohmann::json body_json(const policy::BodyRules& b) {
  nlohmann::json out = {{"body_window", b.window}};
  if (b.jsonrpc) {
    nlohmann::json j = {{"methods", b.jsonrpc->methods}};
    if (b.jsonrpc->tools_given) {
      j["tools"] = nlohmann::json::object();
      for (const auto& t : b.jsonrpc->tools)
        j["tools"][t.name] = t.arguments ? nlohmann::json{{"arguments", nlohmann::json::parse(t.arguments_written)}}
                                         : nlohmann::json::object();
    }
    out["jsonrpc"] = j;
  }
  if (b.body_schema) out["body_schema"] = nlohmann::json::parse(b.body_schema_written);
  if (b.git) out["git"] = {{"push", b.git->push}, {"force", b.git->force}, {"delete", b.git->remove}};
  return out;
}

void print_body(std::ostream& out, const policy::BodyRules& b) {
  if (b.jsonrpc) {
    out << "      jsonrpc methods: " << (b.jsonrpc->methods.empty() ? "any" : join(b.jsonrpc->methods)) << "\n";
    if (b.jsonrpc->tools_given)
      for (const auto& t : b.jsonrpc->tools)
        out << "      jsonrpc tool " << t.name << ": "
            << (t.arguments ? "arguments " + t.arguments_written : std::string("any arguments")) << "\n";
    else
      out << "      jsonrpc tools: any\n";
  }
  if (b.body_schema) out << "      body_schema: " << b.body_schema_written << "\n";
  if (b.git)
    out << "      git push: " << join(b.git->push) << "; force pushes " << (b.git->force ? "allowed" : "refused")
        << "; deletions " << (b.git->remove ? "allowed" : "refused") << "\n";
  out << "      body window: " << b.window << " bytes (a larger body is refused)\n";
}

}  // namespace

void print_rules_listing(std::ostream& out, const policy::Policy& pol, const std::string& agent) {
  for (const auto& [name, p] : profiles(pol, agent)) {
    out << "rules of the " << name << ":\n";
    if (p->rules.empty()) {
      out << "  (none: every host is decided by the host rules alone)\n";
      continue;
    }
    for (const auto& host : hosts(*p)) {
      const auto first = std::find_if(p->rules.begin(), p->rules.end(),
                                      [&](const policy::RequestRule& r) { return r.host.written == host; });
      out << "  host " << host
          << (inspected(*p, first->host) ? " (inspected)"
                                         : " (not inspected: only plain HTTP reaches these rules; a tunnel to it is refused)")
          << "\n";
      for (const auto& r : p->rules) {
        if (r.host.written != host) continue;
        out << "    " << r.list << "[" << r.index << "] " << (r.allow ? "allow" : "deny") << " "
            << (r.methods.empty() ? "any method" : join(r.methods, ",")) << " "
            << (r.paths.empty() ? "any path" : join(r.paths)) << "\n";
        if (r.body) print_body(out, *r.body);
      }
    }
    out << "  anything else to these hosts: denied (rules name them, so what they do not allow is denied)\n";
  }
}

nlohmann::json rules_listing_json(const policy::Policy& pol, const std::string& agent) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, p] : profiles(pol, agent)) {
    nlohmann::json hs = nlohmann::json::array();
    for (const auto& host : hosts(*p)) {
      nlohmann::json rules = nlohmann::json::array();
      bool insp = false;
      for (const auto& r : p->rules) {
        if (r.host.written != host) continue;
        insp = inspected(*p, r.host);
        nlohmann::json j = {{"rule", r.cite()}, {"action", r.allow ? "allow" : "deny"}, {"methods", r.methods},
                            {"paths", r.paths}};
        if (r.body) j["body"] = body_json(*r.body);
        rules.push_back(j);
      }
      hs.push_back({{"host", host}, {"inspected", insp}, {"rules", rules}});
    }
    out.push_back({{"profile", name}, {"hosts", hs}});
  }
  return out;
}

}  // namespace netbox::cli
