#include "netbox/policy/decide.hpp"

#include "embedded_ipv4.hpp"

namespace netbox::policy {
namespace {

bool name_matches(const Rule& r, const std::string& name) {
  if (r.kind == Rule::Kind::exact_host) return name == r.host;
  if (r.kind != Rule::Kind::wildcard_host) return false;
  // "*.x.y" covers every name below x.y, never x.y itself.
  const std::string& s = r.host;
  return name.size() > s.size() + 1 && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
         name[name.size() - s.size() - 1] == '.';
}

bool port_fits(const Rule& r, uint16_t port) { return !r.port || *r.port == port; }

// Deny rules and internal ranges look through IPv6 forms that carry an IPv4 address,
// so that 64:ff9b::a00:5 is refused like 10.0.0.5.
bool network_denies(const Cidr& c, const boost::asio::ip::address& a) {
  if (c.contains(a)) return true;
  if (a.is_v6() && c.base.is_v4())
    if (auto e = detail::embedded_ipv4(a.to_v6())) return c.contains(boost::asio::ip::address(e->v4));
  return false;
}

bool in_ports(const Profile& p, uint16_t port) {
  for (uint16_t q : p.ports)
    if (q == port) return true;
  return false;
}

std::string ports_text(const Profile& p) {
  std::string s = "[";
  for (std::size_t i = 0; i < p.ports.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(p.ports[i]);
  }
  return s + "]";
}

Decision finish(const Profile& p, Decision d) {
  if (d.verdict == Verdict::deny && p.mode == Mode::report) d.verdict = Verdict::report;
  return d;
}

Decision deny(std::string rule, std::string reason) {
  return Decision{Verdict::deny, std::move(rule), std::move(reason)};
}

// How the name fares against the deny and allow rules, before any address is known.
struct NameCheck {
  const Rule* denied_by = nullptr;
  const Rule* allowed_by = nullptr;
  const Rule* wrong_port = nullptr;  // an allow entry for this name, but for another port
};

NameCheck check_name(const Profile& p, const std::string& name, uint16_t port) {
  NameCheck c;
  for (const Rule& r : p.deny)
    if (port_fits(r, port) && name_matches(r, name)) {
      c.denied_by = &r;
      return c;
    }
  for (const Rule& r : p.allow) {
    if (!name_matches(r, name)) continue;
    if (port_fits(r, port)) {
      c.allowed_by = &r;
      return c;
    }
    if (!c.wrong_port) c.wrong_port = &r;
  }
  return c;
}

bool has_network_allow(const Profile& p) {
  for (const Rule& r : p.allow)
    if (r.kind == Rule::Kind::network) return true;
  return false;
}

// Every request a rule lets through comes here (twice for a name: by name, then by
// address), so the reason is sized once rather than grown piece by piece.
Decision matched(Verdict v, const Rule& r, const std::string& who) {
  std::string cite = r.cite();
  static constexpr std::string_view kMatches = " matches ";
  std::string reason;
  reason.reserve(who.size() + kMatches.size() + cite.size());
  reason.append(who).append(kMatches).append(cite);
  return Decision{v, std::move(cite), std::move(reason)};
}

Decision name_denied(const Rule& r, const std::string& name) { return matched(Verdict::deny, r, name); }

Decision wrong_port(const Rule& r, const std::string& what, uint16_t port) {
  return deny(r.cite(), what + " is allowed only on port " + std::to_string(*r.port) + " by " + r.cite() +
                            ", not on port " + std::to_string(port));
}

Decision not_allowed(const std::string& what) {
  return deny("", what + " is not in allow; add it to allow to permit it");
}

// The port list applies unless the entry that allowed the destination names its own port.
std::optional<Decision> port_denied(const Profile& p, const Rule& allowed_by, uint16_t port) {
  if (allowed_by.port || in_ports(p, port)) return std::nullopt;
  return deny("ports", "port " + std::to_string(port) + " is not in ports " + ports_text(p));
}

}  // namespace

Decision decide_name(const Profile& profile, const Host& host, uint16_t port) {
  if (host.is_ip()) return decide_address(profile, host, port, *host.ip);
  NameCheck c = check_name(profile, host.name, port);
  if (c.denied_by) return finish(profile, name_denied(*c.denied_by, host.name));
  if (c.allowed_by) {
    if (auto d = port_denied(profile, *c.allowed_by, port)) return finish(profile, *d);
    return matched(Verdict::allow, *c.allowed_by, host.name);
  }
  if (c.wrong_port) return finish(profile, wrong_port(*c.wrong_port, host.name, port));
  if (has_network_allow(profile))
    // Not listed by name, but allow has networks: the resolved addresses decide.
    return Decision{Verdict::allow, "",
                    host.name + " is not in allow by name; its addresses must be in an allowed network"};
  return finish(profile, not_allowed(host.name));
}

Decision decide_dns_name(const Profile& profile, const std::string& name) {
  // A deny entry with a port leaves the name's other ports open, so the name is answered.
  for (const Rule& r : profile.deny)
    if (!r.port && name_matches(r, name)) return finish(profile, name_denied(r, name));
  for (const Rule& r : profile.allow)
    if (name_matches(r, name)) return matched(Verdict::allow, r, name);
  if (has_network_allow(profile))
    return Decision{Verdict::allow, "", name + " is not in allow by name; its addresses must be in an allowed network"};
  return finish(profile, not_allowed(name));
}

Decision answer_to_ask(Decision by_name, const std::string& name) {
  if (by_name.verdict != Verdict::deny || !by_name.rule.empty()) return by_name;
  return Decision{Verdict::allow, "", name + " is not in allow; answered so that its connection can be asked about"};
}

std::optional<Decision> unlisted_lookup_refused(const Policy& policy, const Profile& profile, const Decision& by_name,
                                                const std::string& name) {
  // Only the network branch above lets a name through without a rule.
  if (by_name.verdict != Verdict::allow || !by_name.rule.empty()) return std::nullopt;
  if (profile.resolve_unlisted_names || policy.pins.contains(name)) return std::nullopt;
  return finish(profile, deny("resolve_unlisted_names",
                              name + " is not in allow by name, and looking it up would send it to a resolver "
                                     "outside (a network entry allows addresses, not lookups); add the name to "
                                     "allow, pin it in resolve, or set \"resolve_unlisted_names\": true"));
}

Decision decide_address(const Profile& profile, const Host& host, uint16_t port,
                        const boost::asio::ip::address& addr) {
  // Strings are built only once the outcome is known: this runs for every connection.
  // "10.0.0.5" for a literal, "db.example resolved to 10.0.0.5, which" for a name.
  auto subject = [&] {
    return host.is_ip() ? addr.to_string() : host.name + " resolved to " + addr.to_string() + ", which";
  };
  // "10.0.0.5" for a literal, "db.example (10.0.0.5)" for a name.
  // Sized once: a name's is built for every request its address lets through.
  auto who = [&] {
    std::string a = addr.to_string();
    if (host.is_ip()) return a;
    std::string s;
    s.reserve(host.name.size() + a.size() + 3);
    s.append(host.name).append(" (").append(a).append(1, ')');
    return s;
  };

  NameCheck c;
  if (!host.is_ip()) {
    c = check_name(profile, host.name, port);
    if (c.denied_by) return finish(profile, name_denied(*c.denied_by, host.name));
  }
  for (const Rule& r : profile.deny)
    if (r.kind == Rule::Kind::network && port_fits(r, port) && network_denies(r.network, addr))
      return finish(profile, matched(Verdict::deny, r, subject()));

  std::string range = internal_range(addr);
  if (!range.empty()) {
    bool excepted = false;
    for (const Cidr& ok : profile.internal_allow)
      if (ok.contains(addr)) {
        excepted = true;
        break;
      }
    // Not finish(): an internal address (cloud metadata, the host's own services) stays
    // refused in report mode too. Report mode learns what an agent needs; a request to
    // 169.254.169.254 let through to be learnt would already have leaked the credentials.
    if (!excepted) return deny("internal", subject() + " is internal (" + range + ") and not in internal.allow");
  }

  const Rule* allowed_by = c.allowed_by;
  const Rule* mismatch = c.wrong_port;
  if (!allowed_by)
    for (const Rule& r : profile.allow) {
      if (r.kind != Rule::Kind::network || !r.network.contains(addr)) continue;
      if (port_fits(r, port)) {
        allowed_by = &r;
        break;
      }
      if (!mismatch) mismatch = &r;
    }
  if (!allowed_by) {
    if (mismatch) return finish(profile, wrong_port(*mismatch, host.name, port));
    return finish(profile, not_allowed(who()));
  }
  if (auto d = port_denied(profile, *allowed_by, port)) return finish(profile, *d);
  return matched(Verdict::allow, *allowed_by, who());
}

}  // namespace netbox::policy
