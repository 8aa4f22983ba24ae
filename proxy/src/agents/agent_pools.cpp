#include "agents/agent_pools.hpp"

#include "agents/agent_registry.hpp"
#include "doors/dns_view.hpp"

namespace netbox::proxy {

namespace {

// A pool outside the proxy's synthetic range could be a real destination. Empty: inside.
std::string range_problem(const policy::Cidr& pool, const policy::Cidr& range) {
  if (pool.base.is_v4() != range.base.is_v4() || pool.prefix < range.prefix || !range.contains(pool.base))
    return (pool.base.is_v4() ? "\"dns_pool\" " : "the IPv6 synthetic pool ") + pool.to_string() +
           " lies outside this proxy's synthetic range " + range.to_string();
  if (pool.base.is_v6() && pool.prefix > 120)
    return "the IPv6 synthetic pool " + pool.to_string() + " is too small (a /120 at the least)";
  return {};
}

// A pool overlapping another agent's would make an address stand for two mappings. Empty:
// it overlaps none. Under dns_mu.
std::string overlap_problem(const policy::Cidr& pool, const Views& views) {
  for (const auto& [agent, view] : views) {
    const auto& other = pool.base.is_v4() ? std::optional(view->pool()) : view->pool6();
    if (other && (other->contains(pool.base) || pool.contains(other->base)))
      return (pool.base.is_v4() ? "\"dns_pool\" " : "the IPv6 synthetic pool ") + pool.to_string() + " overlaps " +
             other->to_string() + ", the synthetic pool of agent " + agent.to_string() + " attached to this proxy";
  }
  return {};
}

// A pool the size of `wanted` that overlaps no attached agent's: `wanted` itself, else the
// first free block after it (wrapping). A launcher's pool says where it would like to be;
// launches sharing a proxy may propose the same one (their /30s numbered alike), and the
// later one takes the next free block rather than fail. Nullopt: none free among the
// blocks looked at (bounded: each attached pool blocks a few at most). Under dns_mu.
std::optional<policy::Cidr> free_pool(const policy::Cidr& wanted, const policy::Cidr& range, const Views& views) {
  auto candidate = wanted;
  for (std::size_t tries = 0; tries < 64 + 4 * views.size(); ++tries) {
    if (overlap_problem(candidate, views).empty()) return candidate;
    const auto next = candidate.next();  // wrapping to the range's start past its end
    candidate = next && range.contains(next->base) ? *next : policy::Cidr{range.base, candidate.prefix};
  }
  return std::nullopt;
}

// An agent's addresses key its view: one that already keys another agent's is refused
// (last writer winning would hand that agent's connections to this one). Under dns_mu.
std::string taken_problem(const AgentAttachment& a, const Views& views) {
  for (const auto* addr : {&a.addr, a.ipv6 ? &a.ipv6->agent : nullptr})
    if (addr && views.contains(canonical_address(*addr)))
      return addr->to_string() + " already has the DNS view of another agent attached to this proxy";
  return {};
}

// What no choice of pools mends: an address already keying a view, a pool outside the
// synthetic range. Under dns_mu; empty: none.
std::string fixed_problem(const AgentAttachment& a, const ProxyOptions& o, const Views& views) {
  auto why = taken_problem(a, views);
  if (why.empty()) why = range_problem(*a.dns_pool, o.synthetic_range);
  if (why.empty() && a.ipv6) why = range_problem(a.ipv6->pool, o.synthetic_range6);
  return why;
}

}  // namespace

// The checks of a view to be added, its pools as they are, under dns_mu; empty: none.
std::string pools_problem(const AgentAttachment& a, const ProxyOptions& o, const Views& views) {
  auto why = fixed_problem(a, o, views);
  if (why.empty()) why = overlap_problem(*a.dns_pool, views);
  if (why.empty() && a.ipv6) why = overlap_problem(a.ipv6->pool, views);
  return why;
}

// `a` given pools that overlap no attached agent's (free_pool), or the reason it cannot
// be. Under dns_mu.
std::string place_pools(AgentAttachment& a, const ProxyOptions& o, const Views& views) {
  if (auto why = fixed_problem(a, o, views); !why.empty()) return why;
  for (auto* pool : {&*a.dns_pool, a.ipv6 ? &a.ipv6->pool : nullptr}) {
    if (!pool) continue;
    auto free = free_pool(*pool, pool->base.is_v4() ? o.synthetic_range : o.synthetic_range6, views);
    if (!free) return overlap_problem(*pool, views) + ", and no free block of its size was found";
    *pool = *free;
  }
  return {};
}

}  // namespace netbox::proxy
