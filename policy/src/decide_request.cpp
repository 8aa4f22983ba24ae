#include "netbox/policy/decide_request.hpp"

#include "netbox/policy/request_path.hpp"

#include <algorithm>

namespace netbox::policy {
namespace {

bool names(const Rule& r, const std::string& host, uint16_t port) {
  return (!r.port || *r.port == port) && r.covers_name(host);
}

bool matches(const RequestRule& r, std::string_view method, std::string_view path) {
  if (!r.methods.empty() && std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end()) return false;
  if (r.paths.empty()) return true;
  return std::any_of(r.paths.begin(), r.paths.end(), [&](const std::string& p) { return path_matches(p, path); });
}

Decision finish(const Profile& p, Decision d) {
  if (d.verdict == Verdict::deny && p.mode == Mode::report) d.verdict = Verdict::report;
  return d;
}

}  // namespace

Decision decide_request(const Profile& profile, const std::string& host, uint16_t port, std::string_view method,
                        std::string_view path) {
  bool named = false;
  for (const RequestRule& r : profile.rules) {
    if (!names(r.host, host, port)) continue;
    named = true;
    if (!matches(r, method, path)) continue;
    if (r.allow) return Decision{Verdict::allow, r.cite(), ""};
    return finish(profile, Decision{Verdict::deny, r.cite(),
                                    std::string(method) + " " + std::string(path) + " on " + host + " is denied by " +
                                        r.cite()});
  }
  if (!named) return Decision{Verdict::allow, "", ""};
  const std::string list = profile.rules.empty() ? "rules" : profile.rules.front().list;
  return finish(profile, Decision{Verdict::deny, list,
                                  "no entry of " + list + " allows " + std::string(method) + " " + std::string(path) +
                                      " on " + host + " (rules name this host, so what they do not allow is denied)"});
}

bool rules_name(const Profile& profile, const std::string& host, uint16_t port) {
  return std::any_of(profile.rules.begin(), profile.rules.end(),
                     [&](const RequestRule& r) { return names(r.host, host, port); });
}

bool inspects(const Profile& profile, const std::string& host, uint16_t port) {
  return std::any_of(profile.inspect.begin(), profile.inspect.end(),
                     [&](const Rule& r) { return names(r, host, port); });
}

}  // namespace netbox::policy
