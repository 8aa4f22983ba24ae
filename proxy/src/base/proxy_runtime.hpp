#pragma once
// What the sessions, the tunnel and the control socket share: the server's state.
#include "netbox/audit/writer.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include "agents/agent_registry.hpp"
#include "agents/agent_slot.hpp"
#include "agents/attribution.hpp"
#include "pipeline/caps.hpp"
#include "pipeline/client_slots.hpp"
#include "pipeline/approvals.hpp"
#include "pipeline/client_tokens.hpp"
#include "doors/tls_door.hpp"
#include "base/counters.hpp"
#include "doors/dns_view.hpp"
#include "base/endpoint_registry.hpp"
#include "base/interface_watch.hpp"
#include "base/fd_limit.hpp"
#include "agents/guardians.hpp"
#include "base/log.hpp"
#include "base/own_endpoints.hpp"
#include "runtime/policy_follower.hpp"
#include "upstream/resolver.hpp"
#include "base/snapshot.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace netbox::proxy {

class ControlServer;
class TransparentListener;
class Inspector;

// One io thread: its io_context, its resolver, its idle upstream connections and its
// own SO_REUSEPORT acceptor for each listen address. Only its own thread touches them.
struct Worker {
  // Only this worker's thread runs the context and touches its sockets (other threads
  // only post to it, open acceptors before handing them over, or stop it), so the
  // reactor's per-descriptor locks guard nothing: UNSAFE_IO leaves them out and keeps
  // the locks around the handler queue and descriptor registration.
  boost::asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard;
  std::unique_ptr<Resolver> resolver;
  std::unique_ptr<UpstreamPool> pool;
  std::map<boost::asio::ip::tcp::endpoint, std::shared_ptr<boost::asio::ip::tcp::acceptor>> acceptors;
  std::thread thread;
};

using PolicyPtr = std::shared_ptr<const policy::Policy>;

// A log line for an event that may come by the thousand per second (accept failing while
// descriptors are out, connections over the cap): note() counts each one and says whether
// one second has passed since the last line; take() hands over the count for that line.
class RateLimitedLog {
 public:
  bool note();
  std::uint64_t take() { return pending_.exchange(0); }

 private:
  std::atomic<std::int64_t> last_ns_{std::numeric_limits<std::int64_t>::min() / 2};
  std::atomic<std::uint64_t> pending_{0};
};

}  // namespace netbox::proxy

namespace netbox::proxy {

// The running proxy behind a Server: io threads, listeners, policy, agents, audit writer.
struct ProxyRuntime {
  explicit ProxyRuntime(ProxyOptions opts);
  ~ProxyRuntime();

  void start();
  void stop();
  void wait();
  bool reload_policy();
  boost::asio::ip::tcp::endpoint add_listener(const boost::asio::ip::tcp::endpoint& ep,
                                              ListenerKind kind = ListenerKind::http);
  void remove_listener(const boost::asio::ip::tcp::endpoint& ep);
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;
  void event(std::string kind, std::string message, std::string detail = {});
  // An event an agent caused (exfiltration_attempt): its `events` row is folded by the
  // writer per agent, kind and `particulars` and minute into counted rows, and its log line
  // (`fields`) is limited per agent by agent_log_limit. Never unbounded, however fast it comes.
  void agent_event(std::string kind, const std::string& agent, std::string particulars, std::string message,
                   std::string detail, LogFields fields);
  // A row as it is complete (or written whole), to the SIEM export if there is one; never waits.
  void export_row(const audit::AuditRecord& row) {
    if (options.exporter) options.exporter->row(row);
  }
  // Server's, for the control socket too (agent_attach.cpp).
  // `counted_as`: AgentIdentity::counted_as (the agent's IPv4 address, for its IPv6 one).
  void register_agent(const boost::asio::ip::address& addr, std::string agent, std::string profile,
                      std::vector<CredentialSecret> credentials = {},
                      const boost::asio::ip::address& counted_as = {}, std::uint64_t netns = 0);
  AttachedAgent attach_agent(const AgentAttachment& attachment);
  // attach_agent for an agent known by its sockets (AgentAttachment::sockets): its AgentSlot.
  AttachedAgent attach_by_sockets(const AgentAttachment& attachment);
  void detach_by_sockets(const AttachedAgent& agent, const AgentEnd& end) noexcept;
  // attach_agent for a client known by its address (not launched).
  AttachedAgent attach_by_address(const AgentAttachment& attachment);
  // A listening socket of an agent's namespace, taken over (closed with the acceptor): it
  // accepts on one io thread, its sessions are that agent's (client_identity.hpp).
  std::shared_ptr<boost::asio::ip::tcp::acceptor> adopt_listener(int fd, ListenerKind kind);
  void detach_agent(const AttachedAgent& agent, const AgentEnd& end) noexcept;

  PolicyPtr current_policy() const { return policy.load(); }
  // When the policy in force was loaded (start or the last good reload), seconds since the
  // Unix epoch, for the netbox_policy_loaded_timestamp_seconds metric.
  std::atomic<double> policy_loaded_at{0};
  void note_policy_loaded();
  // The `agent` label of this identity's requests in the metrics (options.metrics_agent_label).
  std::string metric_label(const AgentIdentity& who) const;
  bool is_stopping() const { return lifecycle.load() >= Lifecycle::stopping; }

  // Declared in this order so everything a session touches outlives the workers whose
  // io_contexts own the sessions.
  ProxyOptions options;
  Logger log;
  std::size_t fd_limit;
  std::unique_ptr<ClientSlots> client_slots;
  int dial_fd_ceiling;           // upstream dials stay below it (dialer.hpp)
  IdlePoolLimits idle_pool;      // in all, shared among the workers' pools
  RateLimitedLog refused_log;
  RateLimitedLog accept_error_log;
  RateLimitedLog foreign_source_log;  // client_identity.hpp
  AgentLogLimit agent_log_limit;
  Counters counters;
  std::unique_ptr<audit::Writer> writer;
  std::unique_ptr<Inspector> inspector;  // with --ca-dir: TLS inspection
  std::unique_ptr<ClientTokens> client_tokens;  // with --client-tokens: who anonymous clients are
  std::unique_ptr<ListenerTls> listener_tls;    // with --listen-cert: the listeners' TLS (tls_door.hpp)
  RateLimitedLog tls_handshake_log;             // tls_door.hpp
  Caps caps;
  AgentRegistry agents;
  Guardians guardians{this};  // each agent's budgets, rates and guardian rules (issue 25)
  // Who opened each agent connection (issue 27); before the writer goes, its lookups answered.
  Attribution attribution{[this](const std::string& agent, const std::string& why) {
    log.write(LogLevel::warn, log_event::attribution_unavailable, {{log_key::agent, agent}, {log_key::message, why}});
  }};
  ApprovalBook approvals{*this};  // `--ask` agents' questions and grants (issue 27)
  Snapshot<policy::Policy> policy;
  std::mutex reload_mu;
  std::optional<FileStamp> loaded_stamp;  // of the policy file last read (under reload_mu)
  std::unique_ptr<PolicyFollower> follower;
  void reload_if_changed();

  mutable std::mutex listeners_mu;
  std::vector<boost::asio::ip::tcp::endpoint> listeners;
  OwnEndpoints own;  // listeners and protect_endpoint()s: never a destination
  // own's endpoints, published for the other netbox proxies on this host; and theirs,
  // with this host's interface addresses, read again every kHostRefresh.
  EndpointRegistry registry;
  std::mutex publish_mu;
  std::atomic<bool> publish_warned{false};  // each said once, not once a second
  std::atomic<bool> registry_warned{false};
  static constexpr std::chrono::seconds kHostRefresh{1};
  std::unique_ptr<boost::asio::steady_timer> host_refresh;
  std::unique_ptr<InterfaceWatch> interface_watch;  // a new host address refused at once
  void protect(const boost::asio::ip::tcp::endpoint& ep);
  void publish_endpoints();
  void refresh_host();
  void schedule_host_refresh();

  // Forward only: created -> starting -> running -> stopping -> stopped (stop() may come
  // from created or starting too). Moved under state_mu, read without it.
  enum class Lifecycle { created, starting, running, stopping, stopped };
  std::mutex state_mu;
  std::condition_variable state_cv;  // wait() for stopped
  std::atomic<Lifecycle> lifecycle{Lifecycle::created};

  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<ControlServer> control;

  // Attached agents' DNS views (and synthetic pools) and transparent listeners, by the
  // agent's address.
  mutable std::mutex dns_mu;
  std::map<boost::asio::ip::address, std::shared_ptr<DnsView>> dns_views;
  std::map<boost::asio::ip::address, std::shared_ptr<TransparentListener>> transparent_listeners;
  std::shared_ptr<DnsView> dns_view_of(const boost::asio::ip::address& agent) const;
  // The agents known by their sockets, by their key (netns_key), each owning what it uses;
  // their views and capture listeners are published in the two maps above under that key.
  std::map<boost::asio::ip::address, std::unique_ptr<AgentSlot>> agent_slots;
  std::atomic<std::size_t> next_adopting{0};  // which worker the next adopted listener runs on
  // Closes every agent's DNS view and capture listener on its io thread (at stop, while
  // the threads still run, so no handler of theirs outlives its io_context).
  void stop_dns_views();

 private:
  void accept_loop(Worker& w, std::shared_ptr<boost::asio::ip::tcp::acceptor> acc, ListenerKind kind);
  // One accepted connection of a proxy listener: its client slot, then its session.
  void take_connection(Worker& w, boost::asio::ip::tcp::socket s, ListenerKind kind);
};

}  // namespace netbox::proxy
