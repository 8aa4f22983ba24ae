#pragma once
// What a door, a session and a step of the pipeline use of the running proxy: the policy in
// force, the log, counters, caps and client slots, the audit writer, TLS, tokens, guardians,
// attribution, the proxy's own endpoints, the agents' identities and DNS views. The
// lifecycle (start, stop, listeners, reloads, attaching agents: ProxyRuntime, in runtime/)
// derives from it; doors/, http/, pipeline/, inspect/ and upstream/ see only this
// (tests/docs/doors_see_no_runtime.py checks it).
#include "netbox/audit/writer.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include "agents/agent_registry.hpp"
#include "agents/attribution.hpp"
#include "agents/guardians.hpp"
#include "base/counters.hpp"
#include "base/fd_limit.hpp"
#include "base/log.hpp"
#include "base/own_endpoints.hpp"
#include "base/snapshot.hpp"
#include "doors/dns_view.hpp"
#include "doors/tls_door.hpp"
#include "pipeline/caps.hpp"
#include "pipeline/client_slots.hpp"
#include "pipeline/client_tokens.hpp"
#include "upstream/resolver.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace netbox::proxy {

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

struct DoorServices {
  DoorServices(const DoorServices&) = delete;
  DoorServices& operator=(const DoorServices&) = delete;

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
  PolicyPtr current_policy() const { return policy.load(); }
  // The `agent` label of this identity's requests in the metrics (options.metrics_agent_label).
  std::string metric_label(const AgentIdentity& who) const;
  bool is_stopping() const { return lifecycle.load() >= Lifecycle::stopping; }
  // The DNS view of an attached agent (by its address, or netns_key for one known by its
  // sockets); null when it has none.
  std::shared_ptr<DnsView> dns_view_of(const boost::asio::ip::address& agent) const;

  // Declared in this order so everything a session touches outlives the workers whose
  // io_contexts own the sessions (ProxyRuntime's, which derives from this).
  ProxyOptions options;
  Logger log;

 protected:
  explicit DoorServices(ProxyOptions opts);
  ~DoorServices();
  std::size_t fd_limit;  // the descriptors this process may have (raised at start)

 public:
  std::unique_ptr<ClientSlots> client_slots;
  int dial_fd_ceiling;  // upstream dials stay below it (dialer.hpp)

 protected:
  IdlePoolLimits idle_pool;  // in all, shared among the workers' pools

 public:
  RateLimitedLog refused_log;
  RateLimitedLog accept_error_log;
  RateLimitedLog foreign_source_log;  // client_identity.hpp
  AgentLogLimit agent_log_limit;
  Counters counters;
  std::unique_ptr<audit::Writer> writer;
  std::unique_ptr<Inspector> inspector;         // with --ca-dir: TLS inspection
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
  Snapshot<policy::Policy> policy;
  OwnEndpoints own;  // listeners and protect_endpoint()s: never a destination

 protected:
  // Forward only: created -> starting -> running -> stopping -> stopped (stop() may come
  // from created or starting too). Moved under ProxyRuntime::state_mu, read without it.
  enum class Lifecycle { created, starting, running, stopping, stopped };
  std::atomic<Lifecycle> lifecycle{Lifecycle::created};
  // Attached agents' DNS views (and synthetic pools), by the agent's address; dns_mu
  // guards ProxyRuntime's capture listeners and agent slots too.
  mutable std::mutex dns_mu;
  std::map<boost::asio::ip::address, std::shared_ptr<DnsView>> dns_views;
};

}  // namespace netbox::proxy
