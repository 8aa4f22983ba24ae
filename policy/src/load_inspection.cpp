#include "load_inspection.hpp"

#include "load_body_rules.hpp"
#include "netbox/policy/request_path.hpp"
#include "rule_entry.hpp"

#include <algorithm>
#include <set>

namespace netbox::policy::detail {

// A host entry as `allow` writes it, but a name: rules and credentials apply to what a
// request names, never to an address range.
Rule host_entry(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string& s = ctx.expect_string(v, pointer);
  auto r = parse_rule_entry(s, RuleList::allow);
  if (auto* err = std::get_if<std::string>(&r)) ctx.fail(pointer, *err);
  Rule rule = std::get<Rule>(std::move(r));
  if (rule.kind == Rule::Kind::network)
    ctx.fail(pointer, "must be a host name or *.suffix, not an address or network (\"" + s + "\")");
  return rule;
}

namespace {

bool is_method_token(const std::string& m) {
  return !m.empty() && m.size() <= 20 && std::all_of(m.begin(), m.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

std::vector<std::string> string_list(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  ctx.expect_array(v, pointer);
  if (v.empty()) ctx.fail(pointer, "must not be empty (leave the key out to match any)");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    ctx.keep_going([&] { out.push_back(ctx.expect_string(v[i], child(pointer, i))); });
  return out;
}

RequestRule read_request_rule(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"host", "methods", "paths", "action", "jsonrpc", "body_schema", "git", "body_window"});
  RequestRule rule;
  auto host = j.find("host");
  if (host == j.end()) ctx.fail(pointer, "a rule needs a \"host\"");
  ctx.keep_going([&] { rule.host = host_entry(ctx, *host, child(pointer, "host")); });
  if (auto it = j.find("methods"); it != j.end())
    ctx.keep_going([&] {
      const std::string mp = child(pointer, "methods");
      auto methods = string_list(ctx, *it, mp);
      for (std::size_t i = 0; i < methods.size(); ++i)
        ctx.keep_going([&] {
          if (!is_method_token(methods[i]))
            ctx.fail(child(mp, i), "\"" + methods[i] + "\" is not an HTTP method in upper case, such as GET or POST");
          rule.methods.push_back(methods[i]);
        });
    });
  if (auto it = j.find("paths"); it != j.end())
    ctx.keep_going([&] {
      const std::string pp = child(pointer, "paths");
      auto paths = string_list(ctx, *it, pp);
      for (std::size_t i = 0; i < paths.size(); ++i)
        ctx.keep_going([&] {
          // A pattern is written as the canonical path it matches; anything else could
          // never match (requests are compared in canonical form).
          RequestPath canonical = normalize_request_path(paths[i]);
          if (!canonical.ok()) ctx.fail(child(pp, i), "\"" + paths[i] + "\": " + canonical.refusal);
          if (canonical.has_query) ctx.fail(child(pp, i), "\"" + paths[i] + "\": a path pattern has no query ('?')");
          if (canonical.path != paths[i])
            ctx.fail(child(pp, i), "\"" + paths[i] + "\" is not in canonical form; write \"" + canonical.path + "\"");
          rule.paths.push_back(paths[i]);
        });
    });
  auto action = j.find("action");
  if (action == j.end()) ctx.fail(pointer, "a rule needs an \"action\": \"allow\" or \"deny\"");
  const std::string& a = ctx.expect_string(*action, child(pointer, "action"));
  if (a != "allow" && a != "deny")
    ctx.fail(child(pointer, "action"), "action must be \"allow\" or \"deny\", not \"" + a + "\"");
  rule.allow = a == "allow";
  rule.body = read_body_rules(ctx, j, pointer, rule);
  return rule;
}

bool valid_credential_name(const std::string& n) {
  return !n.empty() && n.size() <= 32 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// RFC 9110 token characters: what a header name may hold.
bool valid_header_name(const std::string& h) {
  static const std::string extra = "!#$%&'*+-.^_`|~";
  return !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string::npos;
  });
}

Credential read_credential(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"name", "hosts", "header", "format", "secret_env", "secret_file", "env"});
  Credential c;
  auto required = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    if (it == j.end()) ctx.fail(pointer, std::string("a credential needs \"") + key + "\"");
    return *it;
  };
  ctx.keep_going([&] {
    c.name = ctx.expect_string(required("name"), child(pointer, "name"));
    if (!valid_credential_name(c.name))
      ctx.fail(child(pointer, "name"), "\"" + c.name + "\": a name is 1-32 of a-z, 0-9, '_' and '-'");
  });
  ctx.keep_going([&] {
    const std::string hp = child(pointer, "hosts");
    const nlohmann::json& hosts = required("hosts");
    ctx.expect_array(hosts, hp);
    if (hosts.empty()) ctx.fail(hp, "must name at least one host");
    for (std::size_t i = 0; i < hosts.size(); ++i)
      ctx.keep_going([&] { c.hosts.push_back(host_entry(ctx, hosts[i], child(hp, i))); });
  });
  ctx.keep_going([&] {
    c.header = ctx.expect_string(required("header"), child(pointer, "header"));
    if (!valid_header_name(c.header))
      ctx.fail(child(pointer, "header"), "\"" + c.header + "\" is not a header name");
  });
  ctx.keep_going([&] {
    c.format = ctx.expect_string(required("format"), child(pointer, "format"));
    const auto at = c.format.find("{secret}");
    if (at == std::string::npos || c.format.find("{secret}", at + 1) != std::string::npos)
      ctx.fail(child(pointer, "format"), "must hold {secret} exactly once, as in \"Bearer {secret}\"");
    if (std::any_of(c.format.begin(), c.format.end(), [](char ch) { return ch == '\r' || ch == '\n' || ch == '\0'; }))
      ctx.fail(child(pointer, "format"), "must not hold a line break or NUL");
  });
  const bool env = j.contains("secret_env"), file = j.contains("secret_file");
  if (env == file) ctx.fail(pointer, "a credential needs exactly one of \"secret_env\" and \"secret_file\"");
  if (env) {
    c.secret_env = ctx.expect_string(j["secret_env"], child(pointer, "secret_env"));
    if (c.secret_env.empty() || c.secret_env.find('=') != std::string::npos)
      ctx.fail(child(pointer, "secret_env"), "must be an environment variable name");
  } else {
    c.secret_file = ctx.expect_string(j["secret_file"], child(pointer, "secret_file"));
    if (c.secret_file.empty() || c.secret_file.front() != '/')
      ctx.fail(child(pointer, "secret_file"), "must be an absolute path, not \"" + c.secret_file + "\"");
  }
  if (j.contains("env")) {
    c.env = ctx.expect_string(j["env"], child(pointer, "env"));
    if (c.env.empty() || c.env.find('=') != std::string::npos || c.env.find('\0') != std::string::npos)
      ctx.fail(child(pointer, "env"), "must be an environment variable name");
  }
  return c;
}

// Whether some entry of `list` covers every name `entry` covers (for a wildcard entry:
// an equal or broader wildcard), on the entry's port.
bool covered(const std::vector<Rule>& list, const Rule& entry) {
  return std::any_of(list.begin(), list.end(), [&](const Rule& r) {
    if (r.port && (!entry.port || *r.port != *entry.port)) return false;
    if (entry.kind == Rule::Kind::exact_host) return r.covers_name(entry.host);
    if (r.kind != Rule::Kind::wildcard_host) return false;
    return r.host == entry.host || r.covers_name(entry.host);
  });
}

}  // namespace

std::vector<RequestRule> read_request_rules(const LoadContext& ctx, const nlohmann::json& j,
                                            const std::string& pointer, const std::string& list_name) {
  ctx.expect_array(j, pointer);
  std::vector<RequestRule> out;
  for (std::size_t i = 0; i < j.size(); ++i)
    ctx.keep_going([&] {
      RequestRule r = read_request_rule(ctx, j[i], child(pointer, i));
      r.list = list_name;
      r.index = i;
      out.push_back(std::move(r));
    });
  return out;
}

std::vector<Credential> read_credentials(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_array(j, pointer);
  std::vector<Credential> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < j.size(); ++i)
    ctx.keep_going([&] {
      Credential c = read_credential(ctx, j[i], child(pointer, i));
      if (!names.insert(c.name).second)
        ctx.fail(child(child(pointer, i), "name"), "\"" + c.name + "\" is already the name of another credential");
      out.push_back(std::move(c));
    });
  return out;
}

void check_inspection(const LoadContext& ctx, const Profile& profile, const std::string& pointer) {
  for (const RequestRule& r : profile.rules)
    ctx.keep_going([&] {
      if (!covered(profile.allow, r.host))
        ctx.fail(pointer, r.list + "[" + std::to_string(r.index) + "] names " + r.host.written +
                              ", which this profile's allow list does not allow: the rule could never apply");
    });
  for (std::size_t i = 0; i < profile.credentials.size(); ++i)
    for (const Rule& h : profile.credentials[i].hosts)
      ctx.keep_going([&] {
        if (!covered(profile.inspect, h))
          ctx.fail(pointer, "credentials[" + std::to_string(i) + "] (" + profile.credentials[i].name + ") names " +
                                h.written + ", which is not in inspect: a credential is only added to inspected requests");
      });
}

}  // namespace netbox::policy::detail
