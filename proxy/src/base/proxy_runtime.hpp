#pragma once
// The lifecycle of the running proxy: start, stop and wait, its io threads, listeners and
// control socket, the endpoint registry, policy reloads, attaching and detaching agents.
// What its doors and sessions use is its base, DoorServices (door_services.hpp); only
// runtime/ and agents/ see this.
#include "base/door_services.hpp"

#include "agents/agent_slot.hpp"
#include "base/endpoint_registry.hpp"
#include "base/interface_watch.hpp"
#include "pipeline/approvals.hpp"
#include "runtime/policy_follower.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace netbox::proxy {

class ControlServer;
class TransparentListener;

// The running proxy behind a Server: io threads, listeners, reloads, agents attached.
struct ProxyRuntime : DoorServices {
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

  // What the doors may not see, for the lifecycle's free functions and agents/.
  using DoorServices::dns_mu;
  using DoorServices::dns_views;
  using DoorServices::fd_limit;
  using DoorServices::idle_pool;
  using DoorServices::Lifecycle;
  using DoorServices::lifecycle;

  // When the policy in force was loaded (start or the last good reload), seconds since the
  // Unix epoch, for the netbox_policy_loaded_timestamp_seconds metric.
  std::atomic<double> policy_loaded_at{0};
  void note_policy_loaded();

  // Declared in this order (after DoorServices, which everything a session touches is in)
  // so the workers, whose io_contexts own the sessions, go first.
  // `--ask` agents' questions and grants (issue 27); a grant written to the policy file in
  // force reloads it.
  ApprovalBook approvals{*this, [this] { reload_policy(); }};
  std::mutex reload_mu;
  std::optional<FileStamp> loaded_stamp;  // of the policy file last read (under reload_mu)
  std::unique_ptr<PolicyFollower> follower;
  bool reload_if_changed();  // false: a database source could not be read (asked again)

  mutable std::mutex listeners_mu;
  std::vector<boost::asio::ip::tcp::endpoint> listeners;
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

  std::mutex state_mu;               // lifecycle moves under it
  std::condition_variable state_cv;  // wait() for stopped

  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<ControlServer> control;

  // Attached agents' transparent listeners, by the agent's address (under dns_mu, like
  // their DNS views).
  std::map<boost::asio::ip::address, std::shared_ptr<TransparentListener>> transparent_listeners;
  // The agents known by their sockets, by their key (netns_key), each owning what it uses;
  // their views and capture listeners are published in the two maps under that key.
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
