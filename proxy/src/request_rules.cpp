#include "request_rules.hpp"

#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/request_path.hpp"

namespace netbox::proxy {
namespace {

std::string rules_list(const policy::Profile& profile) {
  return profile.rules.empty() ? std::string("rules") : profile.rules.front().list;
}

// A refusal of the rules step, or in report mode the report of it.
RequestVerdict refused(const policy::Profile& profile, unsigned status, std::string rule, std::string reason) {
  RequestVerdict v;
  if (profile.mode == policy::Mode::report) {
    v.decision = policy::Decision{policy::Verdict::report, std::move(rule), std::move(reason)};
    return v;
  }
  v.decision = policy::Decision{policy::Verdict::deny, rule, reason};
  v.refusal = Refusal{status, Outcome::deny, {}, std::move(rule), std::move(reason), {}};
  return v;
}

}  // namespace

RequestVerdict decide_request_rules(const policy::Profile& profile, const std::string& host, std::uint16_t port,
                                    std::string_view method, std::string_view path_and_query) {
  RequestVerdict v;
  if (!policy::rules_name(profile, host, port)) return v;
  const auto canonical = policy::normalize_request_path(path_and_query);
  if (!canonical.ok()) {
    const std::string list = rules_list(profile);
    return refused(profile, 400, list,
                   "the path is refused: " + canonical.refusal + "; " + list + " name " + host +
                       ", so its paths must have one meaning");
  }
  v.path = canonical.path;
  v.path_and_query = canonical.has_query ? canonical.path + "?" + canonical.query : canonical.path;
  v.decision = policy::decide_request(profile, host, port, method, canonical.path);
  if (v.decision.verdict == policy::Verdict::deny)
    v.refusal = Refusal{403, Outcome::deny, {}, v.decision.rule, v.decision.reason, {}};
  return v;
}

RequestVerdict decide_blind_tunnel(const policy::Profile& profile, const std::string& host, std::uint16_t port) {
  if (!policy::rules_name(profile, host, port) || policy::inspects(profile, host, port)) return {};
  const std::string list = rules_list(profile);
  return refused(profile, 403, list,
                 list + " name " + host + ":" + std::to_string(port) +
                     " but netbox does not inspect it, so the requests in a tunnel to it could not be checked; "
                     "add it to inspect (or remove its rules) to reach it over HTTPS");
}

}  // namespace netbox::proxy
