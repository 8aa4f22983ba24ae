#include "netbox/policy/suggest.hpp"

#include "netbox/policy/host.hpp"
#include "netbox/policy/load.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace netbox::policy {
namespace {

using Json = nlohmann::ordered_json;

bool let_through(const std::string& decision) { return decision == "allow" || decision == "report"; }

// "api.example.com:443", "127.0.0.1:8080", "[::1]:8080": an entry for the one port seen,
// so `ports` need not change and nothing else is opened.
std::string entry_of(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos && host.rfind('[', 0) != 0;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool is_name(const std::string& host) {
  auto h = parse_host(host);
  return h.host && !h.host->is_ip();
}

struct Tally {
  std::uint64_t allowed = 0, reported = 0;
  std::string rule;  // the latest report's rule (what enforcing would refuse it by)
  std::string text() const {
    std::string t;
    if (allowed) t = std::to_string(allowed) + " allowed";
    if (reported) t += (t.empty() ? "" : ", ") + std::to_string(reported) + " reported (" + rule + ")";
    return t;
  }
};

// What the rows hold, grouped: the destinations let through, the requests seen inside
// inspected tunnels, and what stayed refused.
struct Seen {
  std::map<std::string, Tally> destinations;   // entry -> counts
  std::map<std::string, Tally> inspected;      // entry of an inspected host -> its requests' counts
  // entry -> path pattern -> methods and counts
  std::map<std::string, std::map<std::string, std::pair<std::set<std::string>, Tally>>> requests;
  std::map<std::string, std::uint64_t> refused;  // "host:port (decision, rule)" -> count
  std::map<std::string, std::uint64_t> unspellable;  // "host:port METHOD /path*" -> count: no pattern says it
  std::uint64_t dns = 0;
};

void count(Tally& t, const SeenRequest& r) {
  if (r.decision == "report") {
    t.reported += r.count;
    t.rule = r.rule.empty() ? "not in allow" : r.rule;
  } else {
    t.allowed += r.count;
  }
}

Seen group(const std::vector<SeenRequest>& rows) {
  Seen s;
  for (const auto& r : rows) {
    if (r.kind == "dns") {  // a lookup: the connection that follows is what needs allowing
      s.dns += r.count;
      continue;
    }
    const std::string entry = entry_of(r.host, r.port);
    if (!let_through(r.decision)) {
      s.refused[entry + " (" + r.decision + (r.rule.empty() ? "" : ", " + r.rule) + ")"] += r.count;
      continue;
    }
    if (!r.inspected) {
      count(s.destinations[entry], r);
      continue;
    }
    count(s.inspected[entry], r);
    // A '*' the agent put in its path would be a wildcard in the rule (at the end, any
    // path below): a request of its choosing must not widen what is suggested.
    if (r.path.find('*') != std::string::npos) {
      s.unspellable[entry + " " + (r.method.empty() ? "GET" : r.method) + " " + r.path] += r.count;
      continue;
    }
    auto& [methods, tally] = s.requests[entry][suggested_path_pattern(r.path)];
    methods.insert(r.method.empty() ? "GET" : r.method);
    count(tally, r);
  }
  return s;
}

void add_unique(Json& list, const std::string& value) {
  if (!list.is_array()) list = Json::array();
  for (const auto& v : list)
    if (v.is_string() && v.get<std::string>() == value) return;
  list.push_back(value);
}

}  // namespace

std::string suggested_path_pattern(const std::string& path) {
  if (path.empty() || path.front() != '/') return "/";
  std::size_t slash = 0;
  for (int segment = 0; segment < 2; ++segment) {
    slash = path.find('/', slash + 1);
    if (slash == std::string::npos || slash + 1 == path.size()) return path;
  }
  return path.substr(0, slash + 1) + "*";
}

std::string suggest_policy(const SuggestInput& in) {
  const Seen seen = group(in.rows);
  Json root = {{"version", 1}};
  if (in.base) {
    (void)parse_policy(in.base->first, in.base->second);  // every mistake of the base, with its line, first
    root = Json::parse(in.base->first, nullptr, true, /*ignore_comments=*/true);
    root.erase("mode");
  }
  Json* target = &root;
  if (in.base && root.contains("agents") && root["agents"].contains(in.agent)) {
    target = &root["agents"][in.agent];
    target->erase("mode");
  }
  std::string header = "// netbox policy suggest: what agent " + in.agent + " did (" + in.source + ")" +
                       (in.base ? ", added to " + in.base->second : std::string()) +
                       ". Review it before enforcing: every entry below was let through once.\n";
  for (const auto& [entry, tally] : seen.destinations) {
    // With a base, an entry it already allowed needs nothing; a report needs its entry.
    if (!in.base || tally.reported) add_unique((*target)["allow"], entry);
    header += "//   allow " + entry + ": " + tally.text() + "\n";
  }
  for (const auto& [entry, tally] : seen.inspected) {
    // Inspected, so the base (when given) already inspects and allows it.
    if (!in.base) {
      add_unique((*target)["allow"], entry);
      add_unique((*target)["inspect"], entry);
    }
    header += "//   inspect " + entry + ": " + tally.text() + "\n";
  }
  for (const auto& [entry, patterns] : seen.requests) {
    const std::string host = entry.substr(0, entry.rfind(':'));
    if (!is_name(host)) continue;  // rules name hosts, never addresses
    for (const auto& [pattern, what] : patterns) {
      const auto& [methods, tally] = what;
      std::string m;
      for (const auto& x : methods) m += (m.empty() ? "" : ",") + x;
      header += "//   rule " + entry + " " + m + " " + pattern + ": " + tally.text() + "\n";
      if (in.base && !tally.reported) continue;  // the base let these through already
      Json rule = {{"host", entry},
                   {"methods", std::vector<std::string>(methods.begin(), methods.end())},
                   {"paths", Json::array({pattern})},
                   {"action", "allow"}};
      if (!(*target)["rules"].is_array()) (*target)["rules"] = Json::array();
      if (std::find((*target)["rules"].begin(), (*target)["rules"].end(), rule) == (*target)["rules"].end())
        (*target)["rules"].push_back(rule);
    }
  }
  if (seen.destinations.empty() && seen.inspected.empty()) header += "//   (no request was let through)\n";
  for (const auto& [what, n] : seen.refused)
    header += "//   not suggested, refused " + std::to_string(n) + "x: " + what + "\n";
  for (const auto& [what, n] : seen.unspellable)
    header += "//   not suggested, " + std::to_string(n) + "x: " + what +
              " (a '*' in a rule's path matches any text: write its rule by hand if it is wanted)\n";
  if (seen.dns) header += "//   " + std::to_string(seen.dns) + " DNS lookups (the connections decide)\n";
  return header + root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace netbox::policy
