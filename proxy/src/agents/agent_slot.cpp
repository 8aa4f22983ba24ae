#include "agents/agent_slot.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/agent_name.hpp"

#include "agents/agent_pools.hpp"
#include "agents/agent_row.hpp"
#include "agents/agent_sockets.hpp"
#include "base/proxy_runtime.hpp"
#include "doors/dns_view.hpp"
#include "runtime/transparent_listener.hpp"

#include <boost/asio/dispatch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

namespace netbox::proxy {

namespace {

// What the attachment must hold before anything is adopted.
void check_request(ProxyRuntime& core, const AgentAttachment& a) {
  if (auto problem = agent_name_problem(a.name); !problem.empty()) throw std::invalid_argument("\"agent\" " + problem);
  if (!a.profile.empty() && !core.current_policy()->agents.contains(a.profile))
    throw std::invalid_argument("the policy has no agents." + a.profile + " profile for agent " + a.name);
  const AgentSockets& in = *a.sockets;
  if (in.http.empty()) throw std::invalid_argument("an agent known by its sockets needs its HTTP listener");
  if (a.dns_pool && (in.dns_udp < 0 || in.dns_tcp < 0 || in.capture.empty()))
    throw std::invalid_argument("a DNS view needs the agent's DNS and capture sockets");
  if (a.dns_pool6 && !a.dns_pool) throw std::invalid_argument("an IPv6 synthetic pool needs the DNS view (\"dns_pool\")");
}

// The agent's sockets, each checked (agent_sockets.hpp) and duplicated into `out`, in the
// order http, socks, capture, DNS over UDP and TCP. Returns their namespace's cookie.
std::uint64_t adopt_sockets(const AgentAttachment& a, std::uint64_t own_netns, std::vector<int>& out) {
  const AgentSockets& in = *a.sockets;
  std::uint64_t netns = 0;
  auto adopt = [&](int fd, int type, const char* what) {
    out.push_back(adopt_agent_socket(fd, type, own_netns, netns, what));
  };
  for (int fd : in.http) adopt(fd, SOCK_STREAM, "HTTP proxy");
  for (int fd : in.socks) adopt(fd, SOCK_STREAM, "SOCKS5");
  for (int fd : in.capture) adopt(fd, SOCK_STREAM, "capture");
  if (a.dns_pool) {
    adopt(in.dns_udp, SOCK_DGRAM, "DNS (UDP)");
    adopt(in.dns_tcp, SOCK_STREAM, "DNS (TCP)");
  }
  return netns;
}

}  // namespace

AgentSlot::Fds::~Fds() {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}
int AgentSlot::Fds::take(std::size_t i) { return std::exchange(fds[i], -1); }

AgentSlot::Services::~Services() {
  if (view) view->stop();
  for (auto& capture : captures) capture->stop();
}

AgentSlot::Registration::~Registration() {
  if (core) core->agents.remove(key);
}

AgentSlot::Attributed::~Attributed() {
  if (core) core->attribution.remove(netns);
}

AgentSlot::Published::~Published() {
  if (!core) return;
  std::lock_guard lock(core->dns_mu);
  core->dns_views.erase(key);
  core->transparent_listeners.erase(key);
}

// Each closed on its own io thread, where its accept loop runs.
AgentSlot::Acceptors::~Acceptors() {
  for (auto& acc : list)
    boost::asio::dispatch(acc->get_executor(), [acc] {
      boost::system::error_code ignored;
      acc->close(ignored);
    });
}

AgentSlot::Row::~Row() {
  if (!core) return;
  audit::AgentExit ex;
  ex.name = agent->name;
  ex.pid = agent->pid;
  ex.ended = audit::Clock::now();
  ex.exit_status = end->exit_status;
  ex.resource_usage = end->resource_usage;
  core->writer->agent_exited(std::move(ex));
}

AgentSlot::AgentSlot(ProxyRuntime& core, const AgentAttachment& wanted) : core_(core) {
  AgentAttachment a = wanted;  // its pools may move (place_pools)
  check_request(core, a);
  const std::uint64_t netns = adopt_sockets(a, core.agents.own_netns(), fds_.fds);
  const auto key = netns_key(netns);
  a.addr = key;  // keys its entries, view and slots; no peer ever has it
  if (a.dns_pool6) a.ipv6 = AgentAttachment::Ipv6Link{key, key, *a.dns_pool6};
  if (core.agents.find(key)) throw std::invalid_argument("the agent's namespace is already attached to this proxy");
  if (a.dns_pool) {
    std::lock_guard lock(core.dns_mu);
    if (auto why = place_pools(a, core.options, core.dns_views); !why.empty()) throw std::invalid_argument(why);
  }
  attached_.addr = key;
  attached_.name = a.name;
  attached_.netns = netns;
  const std::size_t n_listen = a.sockets->http.size() + a.sockets->socks.size();
  std::size_t i = n_listen;
  for (; i < n_listen + a.sockets->capture.size(); ++i)
    services_.captures.push_back(std::make_shared<TransparentListener>(core, *core.workers.front(), fds_.take(i)));
  if (a.dns_pool)
    services_.view = std::make_shared<DnsView>(core, core.workers.front()->ioc, fds_.take(i), fds_.take(i + 1), key,
                                               *a.dns_pool, a.ipv6 ? std::optional(a.ipv6->pool) : std::nullopt);
  core.register_agent(key, a.name, a.profile, a.credentials, key, netns);  // the profile again, under the reload lock
  // Armed field by field: assigning a temporary would run its destructor, which undoes.
  registration_.key = key;
  registration_.core = &core;
  if (a.sockets->diag >= 0) {
    // The init of its PID namespace: every process of the agent descends from it.
    core.attribution.add(netns, a.name, adopt_diag_socket(a.sockets->diag, netns),
                         a.launch ? static_cast<pid_t>(a.launch->pid) : 0);
    attributed_.netns = netns;
    attributed_.core = &core;
  }
  if (services_.view) {
    std::lock_guard lock(core.dns_mu);
    // Again under the lock that inserts: another launcher may have attached meanwhile.
    if (auto why = pools_problem(a, core.options, core.dns_views); !why.empty()) throw std::invalid_argument(why);
    core.dns_views[key] = services_.view;
    core.transparent_listeners[key] = services_.captures.front();
    published_.key = key;
    published_.core = &core;
    attached_.dns_view = true;
    attached_.dns_pool = a.dns_pool;
    if (a.ipv6) attached_.dns_pool6 = a.ipv6->pool;
  }
  for (std::size_t h = 0; h < n_listen; ++h)
    acceptors_.list.push_back(
        core.adopt_listener(fds_.take(h), h < a.sockets->http.size() ? ListenerKind::http : ListenerKind::socks));
  if (services_.view) services_.view->start();
  for (auto& capture : services_.captures) capture->start();
  if (a.launch) open_row(*a.launch);
  core.log.write(log_event::agent_registered,
                 {{log_key::agent, a.name},
                  {log_key::link, "sockets"},
                  {log_key::profile, a.profile},
                  {log_key::dns_pool, attached_.dns_pool ? attached_.dns_pool->to_string() : ""},
                  {log_key::dns_pool6, attached_.dns_pool6 ? attached_.dns_pool6->to_string() : ""}});
}

// Last: nothing after it can fail, so a row is never opened for an agent that is not attached.
void AgentSlot::open_row(const AgentLaunch& launch) {
  open_agent_row(core_, launch, launch.address, attached_);
  row_.agent = &attached_;
  row_.end = &end_;
  row_.core = &core_;
}

AgentSlot::~AgentSlot() = default;

}  // namespace netbox::proxy
