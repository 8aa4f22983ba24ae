#include "netbox/policy/decide_request.hpp"

#include "netbox/policy/request_path.hpp"

#include <algorithm>
#include <optional>
#include <utility>

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

std::string rules_list(const Profile& profile) {
  return profile.rules.empty() ? std::string("rules") : profile.rules.front().list;
}

// The row's decision once a rule decided (rule.rule not empty): the rule's, unless it
// allows and the host decision is a report, which a rule's allow must not hide.
Decision merged(const Decision& host, Decision rule) {
  if (rule.rule.empty()) return host;
  if (rule.verdict != Verdict::allow || host.verdict == Verdict::allow) return rule;
  return host;
}

// A refusal of the rules, or in report mode the report of it (the host decision cannot
// hide a report: merged keeps a rule's report).
template <class Answer>
Answer refused(const Profile& p, const Decision& host, unsigned status, std::string rule, std::string reason) {
  Answer a;
  a.decision = finish(p, Decision{Verdict::deny, std::move(rule), std::move(reason)});
  if (a.decision.verdict == Verdict::deny) {
    a.status = status;
    return a;
  }
  a.decision = merged(host, std::move(a.decision));
  return a;
}

// The first rule for this host that matches the request; `named` says whether any rule
// names the host at all.
const RequestRule* first_match(const Profile& profile, const std::string& host, uint16_t port,
                               std::string_view method, std::string_view path, bool& named) {
  named = false;
  for (const RequestRule& r : profile.rules) {
    if (!names(r.host, host, port)) continue;
    named = true;
    if (matches(r, method, path)) return &r;
  }
  return nullptr;
}

// A path as a lenient server may route it: letters in one case, `;parameters` off each
// segment (Tomcat, Spring), no trailing slash (Express by default). Two spellings the
// canonical form keeps apart may reach the same handler there.
std::string loose(std::string_view path, bool parameters) {
  std::string out;
  out.reserve(path.size());
  bool in_parameter = false;
  for (char c : path) {
    if (c == '/') in_parameter = false;
    else if (c == ';' && parameters) in_parameter = true;
    if (in_parameter) continue;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

bool loosely_matches(const RequestRule& r, std::string_view method, std::string_view path) {
  if (!r.methods.empty() && std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end()) return false;
  const std::string lenient = loose(path, true);
  return std::any_of(r.paths.begin(), r.paths.end(),
                     [&](const std::string& p) { return path_matches(loose(p, false), lenient); });
}

// `allowing`, a rule for this host that allows the request: an earlier rule that would
// refuse it or check its body, were its path spelled as that rule spells it, decides
// instead (a refusal): else a catch-all after a body rule on /mcp lets POST /MCP or
// /mcp;x through unchecked to a server that routes them to /mcp.
std::optional<Decision> respelled(const Profile& profile, const RequestRule& allowing, const std::string& host,
                                  uint16_t port, std::string_view method, std::string_view path) {
  for (const RequestRule& r : profile.rules) {
    if (&r == &allowing) return std::nullopt;
    if ((r.allow && !r.body) || r.paths.empty() || !names(r.host, host, port)) continue;
    if (!loosely_matches(r, method, path)) continue;
    return Decision{Verdict::deny, r.cite(),
                    std::string(method) + " " + std::string(path) + " on " + host + " is refused: " + r.cite() +
                        (r.allow ? " checks the bodies of" : " denies") +
                        " a path a server may read this one as (letter case, a trailing slash or ;parameters "
                        "aside); spell the path as the rule does"};
  }
  return std::nullopt;
}

}  // namespace

Decision match_rules(const Profile& profile, const std::string& host, uint16_t port, std::string_view method,
                     std::string_view path) {
  bool named = false;
  if (const RequestRule* r = first_match(profile, host, port, method, path, named)) {
    if (r->allow) {
      if (auto no = respelled(profile, *r, host, port, method, path)) return finish(profile, std::move(*no));
      return Decision{Verdict::allow, r->cite(), ""};
    }
    return finish(profile, Decision{Verdict::deny, r->cite(),
                                    std::string(method) + " " + std::string(path) + " on " + host + " is denied by " +
                                        r->cite()});
  }
  if (!named) return Decision{Verdict::allow, "", ""};
  const std::string list = rules_list(profile);
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

RequestDecision decide_request(const Profile& profile, const Admitted& admitted, std::string_view method,
                               std::string_view path_and_query, BodyChecks bodies) {
  if (!rules_name(profile, admitted.host, admitted.port))
    return RequestDecision{admitted.decision, 0, std::string(path_and_query), {}};
  const auto canonical = normalize_request_path(path_and_query);
  if (!canonical.ok()) {
    const std::string list = rules_list(profile);
    auto r = refused<RequestDecision>(profile, admitted.decision, 400, list,
                                      "the path is refused: " + canonical.refusal + "; " + list + " name " +
                                          admitted.host + ", so its paths must have one meaning");
    r.path_and_query = std::string(path_and_query);  // report mode: it goes as sent
    return r;
  }
  RequestDecision r;
  r.path = canonical.path;
  r.path_and_query = canonical.has_query ? canonical.path + "?" + canonical.query : canonical.path;
  r.decision = merged(admitted.decision, match_rules(profile, admitted.host, admitted.port, method, canonical.path));
  if (r.decision.verdict == Verdict::deny) {
    r.status = 403;
    return r;
  }
  bool named = false;
  const RequestRule* rule = first_match(profile, admitted.host, admitted.port, method, canonical.path, named);
  if (!rule || !rule->allow || !rule->body) return r;
  if (bodies == BodyChecks::caller_checks) {
    r.body_rule = rule;
    return r;
  }
  // A rule that allows only some bodies, on a path that cannot look at them: refused, not
  // passed unchecked (a policy's author relies on what it says).
  auto refusal = refused<RequestDecision>(
      profile, admitted.decision, 403, rule->cite(),
      std::string(method) + " " + canonical.path + " on " + admitted.host + " is allowed by " + rule->cite() +
          " only for bodies its jsonrpc, body_schema or git part allows, and the way this request came does not "
          "check request bodies, so it is refused rather than forwarded unchecked");
  refusal.path = r.path;
  refusal.path_and_query = r.path_and_query;
  return refusal;
}

TunnelDecision decide_tunnel(const Profile& profile, const Admitted& admitted, Carried carried) {
  if (inspects(profile, admitted.host, admitted.port)) return TunnelDecision{admitted.decision, 0, true};
  if (carried == Carried::plain_http || !rules_name(profile, admitted.host, admitted.port))
    return TunnelDecision{admitted.decision, 0, false};
  const std::string list = rules_list(profile);
  return refused<TunnelDecision>(
      profile, admitted.decision, 403, list,
      list + " name " + admitted.host + ":" + std::to_string(admitted.port) +
          " but netbox does not inspect it, so the requests in a tunnel to it could not be checked; "
          "add it to inspect (or remove its rules) to reach it over HTTPS");
}

Decision check_server_name(const Host& host, bool name_from_address, const ServerNameAsked& hello, TlsEnd end,
                           std::string_view as) {
  const Decision go{Verdict::allow, "", ""};
  // A literal on a blind tunnel has no other name to disagree with.
  if (end == TlsEnd::upstream && host.is_ip()) return go;
  if (!hello.readable)
    return Decision{Verdict::deny, "sni",
                    "the TLS ClientHello cannot be read (" +
                        (hello.problem.empty() ? std::string("incomplete") : std::string(hello.problem)) +
                        "), so its server name cannot be checked against " + host.name + ", " + std::string(as)};
  if (hello.server_name == host.name) return go;
  // No name: the upstream is reached for `host` anyway. netbox's own TLS wants the name
  // it was admitted for, unless that name only stands for an address.
  if (hello.server_name.empty() && (end == TlsEnd::upstream || host.is_ip() || name_from_address)) return go;
  // An Encrypted Client Hello extension changes nothing: a server that does not do ECH
  // ignores it and serves the outer name, so the outer name must be the admitted one too
  // (any bytes in extension 0xfe0d, GREASE included, once let a fronted hello through).
  // Real ECH, whose outer name is a provider's public one, needs the HTTPS record the DNS
  // view never answers, so clients inside do not use it.
  const std::string asked =
      hello.server_name.empty() ? std::string("no server name") : "the server name " + std::string(hello.server_name);
  return Decision{Verdict::deny, "sni",
                  "the TLS ClientHello asks for " + asked + ", not " + host.name + ", " + std::string(as) +
                      " (domain fronting" +
                      (hello.encrypted_client_hello ? "; an Encrypted Client Hello's outer name must be it too)" : ")")};
}

Decision check_request_host(const Host& host, bool absolute_form, std::string_view named) {
  if (absolute_form)
    return Decision{Verdict::deny, "host",
                    "the request names its target in absolute form; inside a connection admitted for " + host.name +
                        " only a path is taken"};
  if (host.is_ip() || named == host.name) return Decision{Verdict::allow, "", ""};
  return Decision{Verdict::deny, "host",
                  "the Host header names " + std::string(named) + ", not " + host.name +
                      ", the name this connection was admitted for"};
}

}  // namespace netbox::policy
