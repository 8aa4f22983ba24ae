#include "load_profile.hpp"

#include "cidr_parse.hpp"
#include "host_sets.hpp"
#include "load_guardian.hpp"
#include "load_inspection.hpp"
#include "load_limits.hpp"
#include "load_sandbox.hpp"
#include "rule_entry.hpp"

#include "netbox/policy/near_miss.hpp"

#include <utility>

namespace netbox::policy::detail {
namespace {

std::vector<Rule> read_rules(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                             const std::string& list_name, RuleList which) {
  ctx.expect_array(j, pointer);
  std::vector<Rule> rules;
  rules.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) ctx.keep_going([&] {
    std::string p = child(pointer, i);
    if (!j[i].is_string()) ctx.fail(p, "must be a string (a host, host:port, IP address or CIDR), not " + json_kind(j[i]));
    auto r = parse_rule_entry(j[i].get_ref<const std::string&>(), which);
    if (auto* err = std::get_if<std::string>(&r)) ctx.fail(p, *err);
    Rule rule = std::get<Rule>(std::move(r));
    rule.list = list_name;
    rule.index = i;
    rules.push_back(std::move(rule));
  });
  return rules;
}

std::vector<uint16_t> read_ports(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_array(j, pointer);
  std::vector<uint16_t> ports;
  for (std::size_t i = 0; i < j.size(); ++i) ctx.keep_going([&] {
    std::string p = child(pointer, i);
    const auto& v = j[i];
    if (v.is_number_integer()) {
      auto n = v.get<long long>();
      if (v.is_number_unsigned() && v.get<unsigned long long>() > 65535ULL) n = 65536;
      if (n < 1 || n > 65535) ctx.fail(p, "port " + v.dump() + " is outside 1-65535");
      ports.push_back(static_cast<uint16_t>(n));
    } else {
      ctx.fail(p, "must be a port number (1-65535), not " + json_kind(v));
    }
  });
  return ports;
}

void read_internal(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer, Profile& profile) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"allow"});
  profile.internal_allow.clear();
  profile.internal_allow_written.clear();
  auto it = j.find("allow");
  if (it == j.end()) return;
  std::string ap = child(pointer, "allow");
  ctx.expect_array(*it, ap);
  for (std::size_t i = 0; i < it->size(); ++i) ctx.keep_going([&] {
    std::string p = child(ap, i);
    const std::string& s = ctx.expect_string((*it)[i], p);
    auto c = parse_cidr(s);
    if (auto* err = std::get_if<std::string>(&c)) ctx.fail(p, "bad CIDR: " + *err);
    profile.internal_allow.push_back(std::get<Cidr>(c));
    profile.internal_allow_written.push_back(s);
  });
}

// "include": ["@python", "@github"]: the hosts of shipped sets (host_sets.cpp), allowed
// as if listed under allow. Each rule cites "include @python" and its place in the set.
std::vector<Rule> read_include(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                               const std::string& list_prefix) {
  ctx.expect_array(j, pointer);
  std::vector<Rule> rules;
  for (std::size_t i = 0; i < j.size(); ++i) ctx.keep_going([&] {
    const std::string p = child(pointer, i);
    const std::string& name = ctx.expect_string(j[i], p);
    const HostSet* set = find_host_set(name);
    if (set == nullptr) {
      std::vector<std::string_view> names;
      std::string list;
      for (const auto& s : host_sets()) names.push_back(s.name), list += (list.empty() ? "" : ", ") + std::string(s.name);
      const std::string best = closest_name(name, names);
      ctx.fail(p, "no host set '" + name + "'" + (best.empty() ? "" : " (did you mean " + best + "?)") +
                      "; the sets are " + list + (name.starts_with("@") ? "" : " (list hosts under allow)"));
    }
    for (std::size_t h = 0; h < set->hosts.size(); ++h) {
      auto r = parse_rule_entry(std::string(set->hosts[h]), RuleList::allow);
      Rule rule = std::get<Rule>(std::move(r));  // the shipped sets are checked by a unit test
      rule.list = list_prefix + "include " + name;
      rule.index = h;
      rules.push_back(std::move(rule));
    }
  });
  return rules;
}

Mode read_mode(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  const std::string& s = ctx.expect_string(j, pointer);
  if (s == "enforce") return Mode::enforce;
  if (s == "report") return Mode::report;
  ctx.fail(pointer, "mode must be \"enforce\" or \"report\", not \"" + s + "\"");
}

}  // namespace

void read_profile_keys(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                       const std::string& list_prefix, Profile& profile) {
  // Each key is its own step: a mistake in one does not hide the mistakes in the others.
  if (auto it = object.find("mode"); it != object.end())
    ctx.keep_going([&] { profile.mode = read_mode(ctx, *it, child(pointer, "mode")); });
  if (auto it = object.find("allow"); it != object.end())
    ctx.keep_going([&] {
      profile.allow = read_rules(ctx, *it, child(pointer, "allow"), list_prefix + "allow", RuleList::allow);
    });
  if (auto it = object.find("include"); it != object.end())
    ctx.keep_going([&] {
      auto included = read_include(ctx, *it, child(pointer, "include"), list_prefix);
      profile.allow.insert(profile.allow.end(), included.begin(), included.end());
    });
  if (auto it = object.find("deny"); it != object.end())
    ctx.keep_going([&] {
      profile.deny = read_rules(ctx, *it, child(pointer, "deny"), list_prefix + "deny", RuleList::deny);
    });
  if (auto it = object.find("ports"); it != object.end())
    ctx.keep_going([&] { profile.ports = read_ports(ctx, *it, child(pointer, "ports")); });
  if (auto it = object.find("internal"); it != object.end())
    ctx.keep_going([&] { read_internal(ctx, *it, child(pointer, "internal"), profile); });
  if (auto it = object.find("limits"); it != object.end())
    ctx.keep_going([&] { read_limits(ctx, *it, child(pointer, "limits"), list_prefix, profile.limits); });
  if (auto it = object.find("sandbox"); it != object.end())
    ctx.keep_going([&] { read_sandbox(ctx, *it, child(pointer, "sandbox"), profile.sandbox); });
  if (auto it = object.find("inspect"); it != object.end())
    ctx.keep_going([&] {
      profile.inspect = read_rules(ctx, *it, child(pointer, "inspect"), list_prefix + "inspect", RuleList::allow);
    });
  if (auto it = object.find("rules"); it != object.end())
    ctx.keep_going(
        [&] { profile.rules = read_request_rules(ctx, *it, child(pointer, "rules"), list_prefix + "rules"); });
  if (auto it = object.find("credentials"); it != object.end())
    ctx.keep_going([&] { profile.credentials = read_credentials(ctx, *it, child(pointer, "credentials")); });
  if (auto it = object.find("guardian"); it != object.end())
    ctx.keep_going([&] { read_guardian(ctx, *it, child(pointer, "guardian"), list_prefix, profile.guardian); });
}

}  // namespace netbox::policy::detail
