// Server::attach_agent / detach_agent: the one way an agent is attached, for the embedded
// proxy and the control socket alike.
#include "netbox/proxy/server.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/endpoint.hpp"

#include "credentials.hpp"
#include "own_endpoints.hpp"
#include "proxy_runtime.hpp"
#include "transparent_session.hpp"

#include <set>
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

// A pool outside the proxy's synthetic range could be a real destination; one that
// overlaps another agent's would make an address stand for two mappings. Under dns_mu.
std::string pool_problem(const policy::Cidr& pool, const policy::Cidr& range,
                         const std::map<boost::asio::ip::address, std::shared_ptr<DnsView>>& views) {
  if (pool.base.is_v4() != range.base.is_v4() || pool.prefix < range.prefix || !range.contains(pool.base))
    return "\"dns_pool\" " + pool.to_string() + " lies outside this proxy's synthetic range " + range.to_string();
  for (const auto& [agent, view] : views) {
    const auto& other = view->pool();
    if (other.contains(pool.base) || pool.contains(other.base))
      return "\"dns_pool\" " + pool.to_string() + " overlaps " + other.to_string() + ", the synthetic pool of agent " +
             agent.to_string() + " attached to this proxy";
  }
  return {};
}

// The same for an IPv6 pool (AgentAttachment::ipv6), against the other agents' IPv6 pools.
std::string pool6_problem(const policy::Cidr& pool, const policy::Cidr& range,
                          const std::map<boost::asio::ip::address, std::shared_ptr<DnsView>>& views) {
  if (!pool.base.is_v6() || pool.prefix < range.prefix || !range.contains(pool.base))
    return "the IPv6 synthetic pool " + pool.to_string() + " lies outside this proxy's synthetic range " +
           range.to_string();
  for (const auto& [agent, view] : views) {
    const auto& other = view->pool6();
    if (other && (other->contains(pool.base) || pool.contains(other->base)))
      return "the IPv6 synthetic pool " + pool.to_string() + " overlaps " + other->to_string() +
             ", the IPv6 synthetic pool of agent " + agent.to_string() + " attached to this proxy";
  }
  return {};
}

// Both checks, under dns_mu; empty: none.
std::string pools_problem(const AgentAttachment& a, const ProxyOptions& o,
                          const std::map<boost::asio::ip::address, std::shared_ptr<DnsView>>& views) {
  auto why = pool_problem(*a.dns_pool, o.synthetic_range, views);
  if (why.empty() && a.ipv6) why = pool6_problem(a.ipv6->pool, o.synthetic_range6, views);
  return why;
}

std::string profile_missing(const std::string& profile, const std::string& agent) {
  return "the policy has no agents." + profile + " profile for agent " + agent;
}

// The view and capture listeners of the agent's addresses (its IPv6 one, if any, shares
// the view and has a capture listener of its own).
void stop_dns_view(ProxyRuntime& core, const boost::asio::ip::address& agent,
                   const std::optional<boost::asio::ip::address>& agent6) {
  std::shared_ptr<DnsView> view;
  std::vector<std::shared_ptr<TransparentListener>> captures;
  {
    std::lock_guard lock(core.dns_mu);
    for (const auto* addr : {&agent, agent6 ? &*agent6 : nullptr}) {
      if (!addr) continue;
      const auto key = canonical_address(*addr);
      if (auto it = core.dns_views.find(key); it != core.dns_views.end()) {
        view = std::move(it->second);
        core.dns_views.erase(it);
      }
      if (auto it = core.transparent_listeners.find(key); it != core.transparent_listeners.end()) {
        captures.push_back(std::move(it->second));
        core.transparent_listeners.erase(it);
      }
    }
  }
  if (view) view->stop();
  for (auto& capture : captures) capture->stop();
}

}  // namespace

void ProxyRuntime::stop_dns_views() {
  std::map<boost::asio::ip::address, std::shared_ptr<DnsView>> views;
  std::map<boost::asio::ip::address, std::shared_ptr<TransparentListener>> captures;
  {
    std::lock_guard lock(dns_mu);
    views.swap(dns_views);
    captures.swap(transparent_listeners);
  }
  // An agent with IPv6 has its view under both addresses: stopped once.
  std::set<DnsView*> stopped;
  for (auto& [addr, view] : views)
    if (stopped.insert(view.get()).second) view->stop();
  for (auto& [addr, capture] : captures) capture->stop();
}

std::shared_ptr<DnsView> ProxyRuntime::dns_view_of(const boost::asio::ip::address& agent) const {
  std::lock_guard lock(dns_mu);
  auto it = dns_views.find(canonical_address(agent));
  return it == dns_views.end() ? nullptr : it->second;
}

AttachedAgent ProxyRuntime::attach_agent(const AgentAttachment& a) {
  auto& core = *this;
  require_in_pool("addr", a.addr, core.options.launch_subnets);
  if (auto problem = agent_name_problem(a.name); !problem.empty()) throw std::invalid_argument("\"agent\" " + problem);
  if (!a.profile.empty() && !core.current_policy()->agents.contains(a.profile))
    throw std::invalid_argument(profile_missing(a.profile, a.name));
  if (a.listen) require_in_pool("listen", a.listen->address(), core.options.launch_subnets);
  if (a.socks_listen) require_in_pool("socks_listen", a.socks_listen->address(), core.options.launch_subnets);
  if (a.ipv6) {
    if (!a.dns_pool) throw std::invalid_argument("IPv6 on the agent's link needs its DNS view (\"dns_pool\")");
    require_in_pool("ipv6 agent address", a.ipv6->agent, core.options.launch_subnets);
    require_in_pool("ipv6 host address", a.ipv6->host, core.options.launch_subnets);
  }
  if (a.dns_pool) {
    std::lock_guard lock(core.dns_mu);
    if (auto why = pools_problem(a, core.options, core.dns_views); !why.empty()) throw std::invalid_argument(why);
  }

  AttachedAgent attached;
  attached.addr = a.addr;
  attached.name = a.name;
  if (a.listen) {
    bool present = false;
    for (const auto& ep : core.local_endpoints()) present = present || ep == *a.listen;
    attached.listener = present ? *a.listen : core.add_listener(*a.listen);  // throws naming the address
    attached.listener_added = !present;
  }
  auto undo_listeners = [&core, &attached] {
    if (attached.listener_added) core.remove_listener(*attached.listener);
    if (attached.socks_listener_added) core.remove_listener(*attached.socks_listener);
  };
  try {
    if (a.socks_listen) {
      bool present = false;
      for (const auto& ep : core.local_endpoints()) present = present || ep == *a.socks_listen;
      attached.socks_listener = present ? *a.socks_listen : core.add_listener(*a.socks_listen, ListenerKind::socks);
      attached.socks_listener_added = !present;
    }
    if (a.dns_pool) {
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
    }
    register_agent(a.addr, a.name, a.profile, a.credentials);  // checks the profile again, under the reload lock
    if (a.ipv6) register_agent(a.ipv6->agent, a.name, a.profile, a.credentials, a.addr);
  } catch (...) {
    if (attached.dns_view) stop_dns_view(core, a.addr, attached.addr6);
    undo_listeners();
    throw;
  }
  if (a.launch) {
    audit::AgentRecord rec;
    rec.name = a.name;
    rec.pid = a.launch->pid;
    rec.command_line = a.launch->command_line;
    rec.address = a.launch->address.empty() ? a.addr.to_string() : a.launch->address;
    rec.policy_digest = a.launch->policy_digest.empty() ? core.current_policy()->digest : a.launch->policy_digest;
    rec.sandbox = a.launch->sandbox;
    rec.started = audit::Clock::now();
    attached.pid = rec.pid;
    attached.row_opened = true;
    core.writer->agent_started(std::move(rec));
  }
  core.log.write("agent_registered", {{"agent", a.name},
                                      {"addr", a.addr.to_string()},
                                      {"profile", a.profile},
                                      {"listen", attached.listener ? endpoint_text(*attached.listener) : ""},
                                      {"socks_listen",
                                       attached.socks_listener ? endpoint_text(*attached.socks_listener) : ""}});
  return attached;
}

void ProxyRuntime::detach_agent(const AttachedAgent& agent, const AgentEnd& end) noexcept {
  auto& core = *this;
  try {
    if (agent.dns_view) stop_dns_view(core, agent.addr, agent.addr6);
    core.agents.remove(agent.addr);
    if (agent.addr6) core.agents.remove(*agent.addr6);
    if (agent.listener_added) core.remove_listener(*agent.listener);
    if (agent.socks_listener_added) core.remove_listener(*agent.socks_listener);
    if (agent.row_opened || end.exit_status) {
      audit::AgentExit ex;
      ex.name = agent.name;
      ex.pid = agent.pid;
      ex.ended = audit::Clock::now();
      ex.exit_status = end.exit_status;
      ex.resource_usage = end.resource_usage;
      core.writer->agent_exited(std::move(ex));
    }
    core.log.write("agent_unregistered", {{"agent", agent.name}, {"addr", agent.addr.to_string()}});
  } catch (const std::exception& e) {
    core.log.write("agent_unregister_failed", {{"agent", agent.name}, {"reason", e.what()}});
  }
}

void ProxyRuntime::register_agent(const boost::asio::ip::address& addr, std::string agent, std::string profile,
                                  std::vector<CredentialSecret> credentials,
                                  const boost::asio::ip::address& counted_as) {
  // An unknown profile would be decided with the top level: refused, never widened. Under
  // the reload lock, so a reload cannot drop the profile between the check and the add.
  std::lock_guard lock(reload_mu);
  const auto now = current_policy();
  if (!profile.empty() && !now->agents.contains(profile))
    throw std::invalid_argument(profile_missing(profile, agent));
  // Its credentials as the profile has them now: a reload does not change an attached
  // agent's (its launcher read the secrets for these). A credential without its secret
  // is refused: the agent would hold a placeholder that nothing replaces.
  const policy::Profile& p = profile.empty() ? now->base : now->profile_for(profile);
  auto bound = bind_credentials(p, std::move(credentials));
  std::shared_ptr<const Tripwire> tripwire;
  if (!bound.empty()) tripwire = std::make_shared<const Tripwire>(*this, agent, std::move(bound));
  agents.add(addr, AgentIdentity{std::move(agent), std::move(profile), std::move(tripwire), canonical_address(counted_as)});
}

}  // namespace netbox::proxy
