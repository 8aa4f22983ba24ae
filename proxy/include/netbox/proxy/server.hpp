#pragma once
// The egress proxy as an object, so `netbox proxy` and `netbox launch` (embedded mode)
// run the same code. See DESIGN.md, "A request's way through".
#include "netbox/policy/policy.hpp"
#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/counters.hpp"
#include "netbox/proxy/log_field.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::audit { class Writer; }
namespace netbox::siem { class Exporter; }

namespace netbox::proxy {

struct ProxyRuntime;  // what runs behind a Server (proxy/src/base/proxy_runtime.hpp)

class Server {
 public:
  // Loads the policy and opens the audit store. Throws policy::PolicyError or
  // std::runtime_error (naming the file or address) when either fails.
  explicit Server(ProxyOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();                 // binds listeners and starts the io threads; returns at once
  void stop();                  // stop accepting, let tunnels finish for the grace period, drain audit
  void wait();                  // blocks until stopped

  // Reloads policy_file (what the watch and SIGHUP do, see ProxyOptions). On failure the
  // old policy stays; both outcomes are logged and recorded in `events`. Returns whether
  // the new policy took effect.
  bool reload_policy();

  // Agent identity: connections from `addr` are logged as `agent` and decided with
  // the policy's agents[profile] entry, or the top-level profile when `profile` is empty.
  // Throws std::invalid_argument when the policy has no such entry; a reload that would
  // drop the profile of a registered agent is refused.
  void register_agent(const boost::asio::ip::address& addr, std::string agent, std::string profile);
  void unregister_agent(const boost::asio::ip::address& addr);

  // What a launcher does for each agent (the embedded proxy and the control socket alike):
  // checks the attachment (the addresses inside launch_subnets or loopback, a usable name,
  // a profile the policy has), adds the listener unless one is there, registers the agent,
  // opens its agents row and logs agent_registered. Throws std::invalid_argument for an
  // attachment refused (the message names the field: "addr", "listen", "agent", the
  // profile) and std::runtime_error when the listener cannot be bound; either way nothing
  // is left behind.
  AttachedAgent attach_agent(const AgentAttachment& attachment);
  // Undoes attach_agent: unregisters, closes the listener it added, ends the agents row
  // with `end`, logs agent_unregistered. Never throws (a failure is logged).
  void detach_agent(const AttachedAgent& agent, const AgentEnd& end = {}) noexcept;

  // Listeners can be added while running (a launcher adds the host side of a veth).
  boost::asio::ip::tcp::endpoint add_listener(const boost::asio::ip::tcp::endpoint& ep,
                                              ListenerKind kind = ListenerKind::http);
  void remove_listener(const boost::asio::ip::tcp::endpoint& ep);
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;
  // An endpoint of netbox's own (the admin endpoint) that no request through the proxy may
  // reach, whatever the policy says. The listeners are protected without asking.
  void protect_endpoint(const boost::asio::ip::tcp::endpoint& ep);

  audit::Writer& audit();

  // One line in the proxy's log, in its format and order, for what runs beside it (the
  // start banner, the admin endpoint), so a JSON log stays JSON from its first line.
  void log(LogLevel level, std::string_view event, LogFields fields);

  // Counters for the dashboards (requests by agent/kind/decision, active connections and
  // tunnels, bytes, DNS and connect latency, reloads, caps hit, audit queue depth).
  CountersSnapshot counters() const;
  // The policy new connections are decided with.
  std::shared_ptr<const policy::Policy> policy() const;
  // /api/agents/{name}: the guardian's state of the agent in this launch, a JSON object
  // (budgets used, violations by event, the last actions); nullopt: no such agent has made
  // a connection in this launch.
  std::optional<std::string> guardian_report(const std::string& agent) const;

  // Approve on the spot (approval.hpp): the questions waiting now, and an answer to one
  // (empty: taken; otherwise why not). Only for callers that are not the agent: the
  // launch's terminal, the control socket's owner, the admin API's token holder.
  std::vector<PendingAsk> pending_asks() const;
  std::string answer_ask(const AskTarget& target, const AskAnswer& answer);

 private:
  std::unique_ptr<ProxyRuntime> impl_;
};

}  // namespace netbox::proxy
