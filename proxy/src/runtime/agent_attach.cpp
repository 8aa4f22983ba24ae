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
#include "doors/dns_view.hpp"
#include "runtime/transparent_listener.hpp"
#include "agents/agent_row.hpp"
#include "runtime/address_attachment.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <stdexcept>
#include <utility>

namespace netbox::proxy {

namespace {

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

AttachedAgent ProxyRuntime::attach_agent(const AgentAttachment& wanted) {
  // Held until detach_agent forgets it, on either link; refused while another agent has it.
  if (!guardians.claim(wanted.name))
    throw std::runtime_error("an agent named " + wanted.name +
                             " is attached to this proxy already: one name is one agent (its budgets, questions and "
                             "grants are kept by name); give this launch another --name, or wait until that one "
                             "ends");
  try {
    // Before its identity is registered (register_agent reads it), undone if it is refused.
    if (wanted.ask) approvals.enable(wanted.name, wanted.profile, *wanted.ask, wanted.ask_listener);
    return wanted.sockets ? attach_by_sockets(wanted) : attach_by_address(wanted);
  } catch (...) {
    approvals.forget(wanted.name);
    guardians.forget(wanted.name);
    throw;
  }
}

// A client that is not launched (a CI job pointing HTTP_PROXY at a running proxy): known by
// its address, on listeners of the proxy's own.
AttachedAgent ProxyRuntime::attach_by_address(const AgentAttachment& wanted) {
  auto& core = *this;
  AgentAttachment a = wanted;  // its pools may move (place_pools)
  check_address_attachment(core, a);
  AttachedAgent attached;
  attached.addr = a.addr;
  attached.name = a.name;
  if (a.listen) attached.listener = open_listener(core, *a.listen, ListenerKind::http, attached.listener_added);
  auto undo_listeners = [&core, &attached] {
    if (attached.listener_added) core.remove_listener(*attached.listener);
    if (attached.socks_listener_added) core.remove_listener(*attached.socks_listener);
  };
  bool registered = false;
  try {
    if (a.socks_listen)
      attached.socks_listener =
          open_listener(core, *a.socks_listen, ListenerKind::socks, attached.socks_listener_added);
    if (a.dns_pool) attach_dns_view(core, a, attached);
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
  if (a.launch)
    open_agent_row(core, *a.launch, a.launch->address.empty() ? a.addr.to_string() : a.launch->address, attached);
  core.log.write(log_event::agent_registered,
                 {{log_key::agent, a.name},
                  {log_key::addr, a.addr.to_string()},
                  {log_key::profile, a.profile},
                  {log_key::listen, attached.listener ? endpoint_text(*attached.listener) : ""},
                  {log_key::socks_listen, attached.socks_listener ? endpoint_text(*attached.socks_listener) : ""},
                  {log_key::dns_pool, attached.dns_pool ? attached.dns_pool->to_string() : ""},
                  {log_key::dns_pool6, attached.dns_pool6 ? attached.dns_pool6->to_string() : ""}});
  return attached;
}

void ProxyRuntime::detach_agent(const AttachedAgent& agent, const AgentEnd& end) noexcept {
  auto& core = *this;
  approvals.forget(agent.name);  // its grants end with the launch; what waits is refused
  core.guardians.forget(agent.name);  // its next launch is a new agent: full budgets, no frozen state
  if (agent.netns) {  // its slot ends its row
    detach_by_sockets(agent, end);
    core.log.write(log_event::agent_unregistered, {{log_key::agent, agent.name}, {log_key::link, "sockets"}});
    return;
  }
  try {
    if (agent.dns_view) stop_dns_view(core, agent.addr, agent.addr6);
    unlink_listeners(core.agents, agent);
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
    core.log.write(log_event::agent_unregistered,
                   {{log_key::agent, agent.name}, {log_key::addr, agent.addr.to_string()}});
  } catch (const std::exception& e) {
    core.log.write(log_event::agent_unregister_failed, {{log_key::agent, agent.name}, {log_key::reason, e.what()}});
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
