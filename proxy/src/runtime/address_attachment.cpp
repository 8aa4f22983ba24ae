#include "runtime/address_attachment.hpp"

#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/endpoint.hpp"

#include "agents/agent_pools.hpp"
#include "base/own_endpoints.hpp"
#include "doors/dns_view.hpp"
#include "runtime/transparent_listener.hpp"

#include <stdexcept>

namespace netbox::proxy {

namespace {

// A launcher attaches its agents' addresses and the host side of their links, both in its
// --subnet. Outside this proxy's pool (launch_subnets) they would be ordinary destinations
// here, so a launcher whose --subnet differs is refused instead of silently unprotected.
// Loopback is no launch's address: host processes registered as agents, whose listener on
// loopback is protected as this proxy's own anyway.
void require_in_pool(const char* key, const boost::asio::ip::address& addr, const std::vector<policy::Cidr>& pool) {
  const auto a = destination_form(addr);
  if (a.is_loopback()) return;
  for (const auto& net : pool)
    if (net.contains(a)) return;
  std::string nets;
  for (const auto& net : pool) nets += (nets.empty() ? "" : ", ") + net.to_string();
  throw std::invalid_argument(std::string("\"") + key + "\" " + addr.to_string() +
                              " is outside this proxy's launch subnet pool (" + nets +
                              "), so its requests could reach it; start the launcher with a --subnet inside the "
                              "proxy's --subnet");
}

// An agent's address is a plain one: an IPv4-mapped or IPv4-compatible IPv6 form of an
// address would key the IPv4 agent's entries (canonical_address), and a scope id would
// make every lookup of the real peer, which arrives without one, miss: its connections
// would pass as anonymous, under the top-level profile.
void require_plain_address(const char* key, const boost::asio::ip::address& a, bool v6) {
  if (v6 && !a.is_v6()) throw std::invalid_argument(std::string("\"") + key + "\" " + a.to_string() + " is not IPv6");
  if (!a.is_v6()) return;
  const auto six = a.to_v6();
  const auto b = six.to_bytes();
  bool leading_zeros = true;  // ::a.b.c.d, the deprecated IPv4-compatible form (:: and ::1 aside)
  for (int i = 0; i < 12; ++i) leading_zeros = leading_zeros && b[i] == 0;
  const bool compatible = leading_zeros && !six.is_loopback() && !six.is_unspecified();
  if (six.scope_id() != 0 || six.is_v4_mapped() || (v6 && compatible))
    throw std::invalid_argument(std::string("\"") + key + "\" " + a.to_string() +
                                " is not a plain IPv6 address (no IPv4-mapped or -compatible form, no scope id)");
}

// One address, one agent: a registration claiming an address another agent holds (its
// IPv4 address, or its IPv6 link address in any spelling) is refused, not a takeover.
void require_unregistered(const AgentRegistry& agents, const char* key, const boost::asio::ip::address& a) {
  if (auto who = agents.find(a))
    throw std::invalid_argument(std::string("\"") + key + "\" " + a.to_string() + " is already registered, as agent " +
                                who->agent + " (unregister it first)");
}

}  // namespace

std::string profile_missing(const std::string& profile, const std::string& agent) {
  return "the policy has no agents." + profile + " profile for agent " + agent;
}

void check_address_attachment(ProxyRuntime& core, AgentAttachment& a) {
  require_plain_address("addr", a.addr, false);
  require_in_pool("addr", a.addr, core.options.launch_subnets);
  require_unregistered(core.agents, "addr", a.addr);
  if (auto problem = agent_name_problem(a.name); !problem.empty()) throw std::invalid_argument("\"agent\" " + problem);
  if (!a.profile.empty() && !core.current_policy()->agents.contains(a.profile))
    throw std::invalid_argument(profile_missing(a.profile, a.name));
  if (a.listen) require_in_pool("listen", a.listen->address(), core.options.launch_subnets);
  if (a.socks_listen) require_in_pool("socks_listen", a.socks_listen->address(), core.options.launch_subnets);
  if (a.ipv6) {
    if (!a.dns_pool) throw std::invalid_argument("IPv6 on the agent's link needs its DNS view (\"dns_pool\")");
    require_plain_address("ipv6 agent address", a.ipv6->agent, true);
    require_plain_address("ipv6 host address", a.ipv6->host, true);
    require_in_pool("ipv6 agent address", a.ipv6->agent, core.options.launch_subnets);
    require_in_pool("ipv6 host address", a.ipv6->host, core.options.launch_subnets);
    require_unregistered(core.agents, "ipv6 agent address", a.ipv6->agent);
    if (a.ipv6->agent == a.ipv6->host && !a.ipv6->agent.is_loopback())
      throw std::invalid_argument("the IPv6 agent and host addresses are the same, " + a.ipv6->agent.to_string());
  }
  if (a.dns_pool) {
    std::lock_guard lock(core.dns_mu);
    if (auto why = place_pools(a, core.options, core.dns_views); !why.empty()) throw std::invalid_argument(why);
  }

}

boost::asio::ip::tcp::endpoint open_listener(ProxyRuntime& core, const boost::asio::ip::tcp::endpoint& ep,
                                             ListenerKind kind, bool& added) {
  bool present = false;
  for (const auto& own : core.local_endpoints()) present = present || own == ep;
  if (present) return ep;
  auto opened = core.add_listener(ep, kind);  // throws naming the address
  added = true;
  return opened;
}

void attach_dns_view(ProxyRuntime& core, const AgentAttachment& a, AttachedAgent& attached) {
  if (!attached.listener) throw std::invalid_argument("a DNS view needs the agent's listener (\"listen\")");
  auto view = std::make_shared<DnsView>(core, core.workers.front()->ioc, attached.listener->address(), a.addr,
                                        *a.dns_pool, a.ipv6 ? std::optional(a.ipv6->pool) : std::nullopt);
  view->start();
  auto capture = std::make_shared<TransparentListener>(core, *core.workers.front(), attached.listener->address());
  capture->start();
  attached.transparent = capture->endpoint();
  std::shared_ptr<TransparentListener> capture6;
  if (a.ipv6) {
    try {
      // The same port as on IPv4: the launcher's rules name one capture port.
      capture6 = std::make_shared<TransparentListener>(core, *core.workers.front(), a.ipv6->host,
                                                       capture->endpoint().port());
    } catch (...) {
      view->stop();
      capture->stop();
      throw;
    }
    capture6->start();
    attached.transparent6 = capture6->endpoint();
  }
  std::unique_lock lock(core.dns_mu);
  // Again under the lock that inserts: another launcher may have attached meanwhile.
  if (auto why = pools_problem(a, core.options, core.dns_views); !why.empty()) {
    lock.unlock();
    view->stop();
    capture->stop();
    if (capture6) capture6->stop();
    throw std::invalid_argument(why);
  }
  if (a.ipv6) {
    core.dns_views[canonical_address(a.ipv6->agent)] = view;
    core.transparent_listeners[canonical_address(a.ipv6->agent)] = std::move(capture6);
    attached.addr6 = a.ipv6->agent;
  }
  core.dns_views[canonical_address(a.addr)] = std::move(view);
  core.transparent_listeners[canonical_address(a.addr)] = std::move(capture);
  attached.dns_view = true;
  attached.dns_pool = a.dns_pool;
  if (a.ipv6) attached.dns_pool6 = a.ipv6->pool;
}

}  // namespace netbox::proxy
