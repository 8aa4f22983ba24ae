#include "pipeline/admission.hpp"

#include "inspect/credentials.hpp"
#include "pipeline/target.hpp"

namespace netbox::proxy {

void Admission::bind(const policy::Policy& policy, const policy::Profile& profile, const AgentIdentity& who) {
  policy_ = &policy;
  profile_ = &profile;
  bound_profile_ = &profile;
  asks_ = who.asks;
  agent_ = who.agent;
  tripwire_ = who.tripwire;
  guard_ = guardians_.of(agent_);
  guard_->configure(profile);
}

namespace {

// The grant as an allow entry of its own, put first: a deny entry still refuses first, and
// an internal address or netbox's own endpoint is still refused by the address steps.
policy::Profile with_grant(const policy::Profile& p, const policy::Host& host, std::uint16_t port, const Grant& g) {
  policy::Profile out = p;
  policy::Rule r;
  if (host.is_ip()) {
    r.kind = policy::Rule::Kind::network;
    r.network = policy::Cidr{*host.ip, static_cast<unsigned>(host.ip->is_v4() ? 32 : 128)};
  } else {
    r.kind = policy::Rule::Kind::exact_host;
    r.host = host.name;
  }
  r.port = port;
  r.written = g.rule();
  r.list = "grant";
  r.index = g.id;
  out.allow.insert(out.allow.begin(), std::move(r));
  return out;
}

}  // namespace

// An address literal that is internal (whatever internal.allow excepts) or netbox's own
// endpoint is never put to a person: such a refusal stays final.
bool Admission::never_asked(const policy::Host& host, std::uint16_t port) const {
  return host.is_ip() && (!policy::internal_range(*host.ip).empty() || !own_.refusal(*host.ip, port).empty());
}

std::optional<AdmissionResult> Admission::begin(const policy::Host& host, std::uint16_t port, const Grant* grant) {
  host_ = host;
  port_ = port;
  profile_ = bound_profile_;
  granted_.reset();
  grant_.reset();
  if (grant) {
    grant_ = *grant;
    granted_ = with_grant(*bound_profile_, host, port, *grant);
    profile_ = &*granted_;
  }
  if (tripwire_)
    if (auto r = tripwire_->check_host_name(host_.name)) return refused(std::move(*r));
  name_ = policy::decide_name(*profile_, host_, port_);
  if (!name_.lets_through()) {
    auto no = refused({403, outcome_of(name_.verdict), {}, name_.rule, name_.reason, {}});
    // Not listed (no rule), or a port the port list lacks: what a person may allow.
    no.askable = asks_ && !grant_ && (name_.rule.empty() || name_.rule == "ports") && !never_asked(host_, port_);
    return no;
  }
  // Before any lookup: the lookup alone would carry an encoded label to the domain's servers,
  // so a halt, a spent budget, a rate and a new host's token apply before it too (a name
  // looked up and then refused 429 has already told its data).
  if (auto no = guardians_.check_labels(agent_, *profile_, host_.name, port_)) return refused(std::move(*no));
  if (auto no = guard_->admit(host_.name, port_, std::chrono::steady_clock::now())) return refused(std::move(*no));
  if (host_.is_ip()) return decide({&*host_.ip, 1});
  if (auto it = policy_->pins.find(host_.name); it != policy_->pins.end()) return decide(it->second);
  if (auto d = policy::unlisted_lookup_refused(*policy_, *profile_, name_, host_.name)) {
    if (!d->lets_through()) return refused({403, outcome_of(d->verdict), {}, d->rule, d->reason, {}});
    name_ = std::move(*d);  // report mode: looked up, recorded as what enforce would refuse
  }
  return std::nullopt;
}

AdmissionResult Admission::resolved(const ResolveResult& r) {
  if (!r.error.empty()) {
    counters_.upstream_errors.fetch_add(1);
    return Refused{{502, Outcome::error, {}, {}, r.error, {}}, name_.rule, name_.reason, {}, r.error};
  }
  return decide(r.addresses);
}

Refused Admission::refused(Refusal r, std::string resolved_addr) {
  Refused out{std::move(r), {}, {}, std::move(resolved_addr), {}};
  out.rule = out.refusal.rule;
  out.reason = out.refusal.reason;
  return out;
}

AdmissionResult Admission::decide(std::span<const boost::asio::ip::address> addresses) {
  auto d = policy::decide_destination(*profile_, host_, port_, name_, addresses,
                                      [this](const boost::asio::ip::address& a, std::uint16_t p) {
                                        return own_.refusal(a, p);
                                      });
  const std::string shown = d.shown ? d.shown->to_string() : std::string();
  if (d.allowed.empty())
    return refused({403, outcome_of(d.decision.verdict), {}, std::move(d.decision.rule), std::move(d.decision.reason), {}},
                   shown);

  auto cap = caps_.acquire(agent_, host_.name, canonical_address(d.allowed.front()).to_string(), policy_->base.limits,
                           profile_->limits);
  switch (cap.kind) {
    case CapKind::none: break;
    case CapKind::global: counters_.caps_hit_global.fetch_add(1); break;
    case CapKind::per_agent: counters_.caps_hit_agent.fetch_add(1); break;
    case CapKind::per_host:
    case CapKind::per_address: counters_.caps_hit_host.fetch_add(1); break;
  }
  if (cap.kind != CapKind::none)
    return refused({429, Outcome::cap, {}, std::string(rule_of(cap.kind)), std::move(cap.reason), 1u}, shown);

  Admitted a;
  a.decision = std::move(d.decision);
  if (grant_ && a.decision.rule.rfind("grant[", 0) == 0) {  // let through by the grant's entry
    a.decision.rule = grant_->rule();
    a.decision.reason = authority(host_.name, port_) + " was granted by " + grant_->grantor + " (" +
                        std::string(to_string(grant_->scope)) + ")";
  }
  a.endpoints.reserve(d.allowed.size());
  for (const auto& addr : d.allowed) a.endpoints.emplace_back(addr, port_);
  a.cap = std::move(cap.token);
  a.meter = guard_->meter(host_.name, port_);
  return a;
}

}  // namespace netbox::proxy
