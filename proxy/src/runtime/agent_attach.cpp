// Server::attach_agent / detach_agent: the one way an agent is attached, for the embedded
// proxy and the control socket alike.
#include "netbox/proxy/server.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/endpoint.hpp"

#include "agents/agent_pools.hpp"
#include "agents/agent_slot.hpp"
#include "agents/agent_sockets.hpp"
#include "inspect/credentials.hpp"
#include "base/own_endpoints.hpp"
#include "base/proxy_runtime.hpp"
#include "doors/transparent_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <stdexcept>
#include <utility>

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

// The listeners that are the agent's alone: its capture listeners, and its HTTP and SOCKS5
// listeners when attaching added them (on the host side of its link). One already open
// (the proxy's own, shared with host clients) stays everyone's.
std::vector<boost::asio::ip::tcp::endpoint> own_listeners(const AttachedAgent& a) {
  std::vector<boost::asio::ip::tcp::endpoint> out;
  if (a.listener && a.listener_added) out.push_back(*a.listener);
  if (a.socks_listener && a.socks_listener_added) out.push_back(*a.socks_listener);
  if (a.transparent) out.push_back(*a.transparent);
  if (a.transparent6) out.push_back(*a.transparent6);
  return out;
}

void unlink_listeners(AgentRegistry& agents, const AttachedAgent& a) {
  for (const auto& ep : own_listeners(a)) agents.remove_link(ep);
}

std::string profile_missing(const std::string& profile, const std::string& agent) {
  return "the policy has no agents." + profile + " profile for agent " + agent;
}

// The view and capture listeners of the agent's addresses (its IPv6 one, if any, shares
// the view and has a capture listener of its own).
void stop_dns_view(ProxyRuntime& core, const boost::asio::ip::address& agent,
                   const std::optional<boost::asio::ip::address>& agent6) {
  std::set<std::shared_ptr<DnsView>> views;  // one, under both addresses
  std::vector<std::shared_ptr<TransparentListener>> captures;
  {
    std::lock_guard lock(core.dns_mu);
    for (const auto* addr : {&agent, agent6 ? &*agent6 : nullptr}) {
      if (!addr) continue;
      const auto key = canonical_address(*addr);
      if (auto it = core.dns_views.find(key); it != core.dns_views.end()) {
        views.insert(std::move(it->second));
        core.dns_views.erase(it);
      }
      if (auto it = core.transparent_listeners.find(key); it != core.transparent_listeners.end()) {
        captures.push_back(std::move(it->second));
        core.transparent_listeners.erase(it);
      }
    }
  }
  for (const auto& view : views) view->stop();
  for (auto& capture : captures) capture->stop();
}

}  // namespace

std::shared_ptr<boost::asio::ip::tcp::acceptor> ProxyRuntime::adopt_listener(int fd, ListenerKind kind) {
  Worker& w = *workers[next_adopting.fetch_add(1) % workers.size()];
  auto acc = std::make_shared<boost::asio::ip::tcp::acceptor>(w.ioc);
  boost::system::error_code ec;
  acc->assign(socket_family(fd) == AF_INET6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    throw std::runtime_error("the agent's listener: " + ec.message());
  }
  boost::asio::post(w.ioc, [this, &w, acc, kind] { accept_loop(w, acc, kind); });
  return acc;
}

// The agent's slot owns all of it (agent_slot.hpp); here it is only filed under its key.
AttachedAgent ProxyRuntime::attach_by_sockets(const AgentAttachment& a) {
  auto slot = std::make_unique<AgentSlot>(*this, a);
  AttachedAgent attached = slot->attached();
  std::lock_guard lock(dns_mu);
  agent_slots.emplace(attached.addr, std::move(slot));  // its key is new: the registry refused a second
  return attached;
}

void ProxyRuntime::detach_by_sockets(const AttachedAgent& agent, const AgentEnd& end) noexcept {
  std::unique_ptr<AgentSlot> slot;
  {
    std::lock_guard lock(dns_mu);
    if (auto it = agent_slots.find(agent.addr); it != agent_slots.end()) {
      slot = std::move(it->second);
      agent_slots.erase(it);
    }
  }
  if (slot) slot->end(end);
  // Destroyed here, outside dns_mu, which it takes to withdraw its view.
}

void ProxyRuntime::stop_dns_views() {
  std::map<boost::asio::ip::address, std::unique_ptr<AgentSlot>> slots;
  {
    std::lock_guard lock(dns_mu);
    slots.swap(agent_slots);
  }
  slots.clear();  // each detaches itself (its row ended with no exit status: the proxy stops)
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

AttachedAgent ProxyRuntime::attach_agent(const AgentAttachment& wanted) {
  // Before its identity is registered (register_agent reads it), undone if it is refused.
  if (wanted.ask) approvals.enable(wanted.name, wanted.profile, *wanted.ask);
  try {
    return wanted.sockets ? attach_by_sockets(wanted) : attach_by_address(wanted);
  } catch (...) {
    if (wanted.ask) approvals.forget(wanted.name);
    throw;
  }
}

// A client that is not launched (a CI job pointing HTTP_PROXY at a running proxy): known by
// its address, on listeners of the proxy's own.
AttachedAgent ProxyRuntime::attach_by_address(const AgentAttachment& wanted) {
  auto& core = *this;
  AgentAttachment a = wanted;  // its pools may move (place_pools)
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
  bool registered = false;
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
      attached.dns_pool = a.dns_pool;
      if (a.ipv6) attached.dns_pool6 = a.ipv6->pool;
    }
    register_agent(a.addr, a.name, a.profile, a.credentials);  // checks the profile again, under the reload lock
    registered = true;
    if (a.ipv6) register_agent(a.ipv6->agent, a.name, a.profile, a.credentials, a.addr);
    // Every connection on the agent's own listeners is this agent's, from the addresses
    // registered for it, or refused: never anonymous (AgentRegistry::identify).
    std::vector<boost::asio::ip::address> addresses{a.addr};
    if (a.ipv6) addresses.push_back(a.ipv6->agent);
    for (const auto& ep : own_listeners(attached)) core.agents.add_link(ep, addresses);
  } catch (...) {
    unlink_listeners(core.agents, attached);
    if (registered) core.agents.remove(a.addr);  // a refused registration leaves no identity behind
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
                                       attached.socks_listener ? endpoint_text(*attached.socks_listener) : ""},
                                      {"dns_pool", attached.dns_pool ? attached.dns_pool->to_string() : ""},
                                      {"dns_pool6", attached.dns_pool6 ? attached.dns_pool6->to_string() : ""}});
  return attached;
}

void ProxyRuntime::detach_agent(const AttachedAgent& agent, const AgentEnd& end) noexcept {
  auto& core = *this;
  approvals.forget(agent.name);  // its grants end with the launch; what waits is refused
  if (agent.netns) {  // its slot ends its row
    detach_by_sockets(agent, end);
    core.log.write("agent_unregistered", {{"agent", agent.name}, {"link", "sockets"}});
    return;
  }
  try {
    if (agent.dns_view) stop_dns_view(core, agent.addr, agent.addr6);
    unlink_listeners(core.agents, agent);
    core.agents.remove(agent.addr);
    if (agent.addr6) core.agents.remove(*agent.addr6);
    core.guardians.forget(agent.name);  // its next launch starts with full budgets
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
                                  const boost::asio::ip::address& counted_as, std::uint64_t netns) {
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
  ApprovalBook* asks = approvals.settings(agent) ? &approvals : nullptr;  // attached with `ask`
  agents.add(addr, AgentIdentity{std::move(agent), std::move(profile), std::move(tripwire), canonical_address(counted_as),
                                 netns, asks});
}

}  // namespace netbox::proxy
