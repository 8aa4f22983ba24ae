#pragma once
// An agent as its launcher attaches it to a proxy (Server::attach_agent), whether the
// proxy runs in the launcher (embedded) or is reached over the control socket.
#include "netbox/policy/cidr.hpp"
#include "netbox/proxy/approval.hpp"
#include "netbox/proxy/credential_secret.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

// The launcher's hand on its agent for the guardian's actions (issue 25): `freeze` or
// `kill` (thaw first; SIGTERM, a grace, then SIGKILL to the whole cgroup). Answers what it
// did, or throws saying why it could not: the guardian then reports the failure loudly.
// `why` names the rule and its trigger. Called on the guardian's own thread, never an io
// thread; it may take seconds.
using GuardianEnforcer = std::function<std::string(std::string_view action, const std::string& why)>;

// The agents row of a launch.
struct AgentLaunch {
  std::int64_t pid = 0;
  std::string command_line;
  std::string address;        // empty: the attachment's address
  std::string policy_digest;  // empty: the digest of the policy in force
  std::string sandbox;        // a JSON object as text: what it runs under; empty: none
};

// Listening sockets a launcher made inside the agent's own network namespace (issue 24),
// as descriptors the attachment duplicates (the caller keeps and closes its own). Nothing
// but that namespace can reach them, so a connection one of them accepts is the agent's:
// its identity is the socket, never an address.
struct AgentSockets {
  std::vector<int> http;     // HTTP proxy listeners (127.0.0.1 and ::1)
  std::vector<int> socks;    // SOCKS5 listeners, likewise; none: no SOCKS5
  std::vector<int> capture;  // where the namespace's redirect sends captured TCP; none: no capture
  int dns_udp = -1;          // the DNS view's sockets (with dns_pool)
  int dns_tcp = -1;
  // A NETLINK_SOCK_DIAG socket made in the same namespace: the proxy asks it which of the
  // agent's sockets a connection came from, to record the process (issue 27). -1: none,
  // and the agent's rows name no process.
  int diag = -1;
};

struct AgentAttachment {
  // The agent's client address (unused with `sockets`: an agent known by its sockets has none).
  boost::asio::ip::address addr;
  std::string name;
  std::string profile;  // key of the policy's agents; empty: the top-level profile
  // A listener for the agent (the host side of its link); port 0 picks one. One already
  // listening there is used as it is, and stays when the agent is detached.
  std::optional<boost::asio::ip::tcp::endpoint> listen;
  // A SOCKS5 listener for it, likewise (port 0 picks one); none: no SOCKS for this agent.
  std::optional<boost::asio::ip::tcp::endpoint> socks_listen;
  std::optional<AgentLaunch> launch;  // opens its agents row
  // Serve the agent the DNS view of its policy (UDP and TCP port 53 on the listener's
  // address), answering allowed names from this pool of synthetic addresses, and listen
  // for its captured connections (AttachedAgent::transparent) (issue 15). Needs `listen`.
  // Unset: neither. A pool another attached agent holds is a preference: the agent gets
  // the next free block of its size (AttachedAgent::dns_pool), and IPv6 pools likewise.
  std::optional<policy::Cidr> dns_pool;
  // IPv6 on the agent's link as well (needs dns_pool): its address there, the host side's
  // (a second capture listener listens on it), both inside the proxy's launch_subnets, and
  // the synthetic IPv6 pool AAAA answers come from (inside synthetic_range6). The agent's
  // connections from either address are the same agent's.
  struct Ipv6Link {
    boost::asio::ip::address agent;
    boost::asio::ip::address host;
    policy::Cidr pool;
  };
  std::optional<Ipv6Link> ipv6;
  // The secrets of its profile's `credentials`, read by the launcher, one per credential
  // (a profile with credentials is refused without them); the agent holds the placeholders.
  std::vector<CredentialSecret> credentials;
  // Set: the agent is known by these sockets (its namespace's), not by addr, listen,
  // socks_listen or ipv6, which are then ignored; dns_pool (and ipv6's pool) still apply.
  std::optional<AgentSockets> sockets;
  // With sockets: the synthetic IPv6 pool of its AAAA answers (none: no AAAA records).
  std::optional<policy::Cidr> dns_pool6;
  // How the guardian freezes or kills this agent; unset: it cannot (its actions are then
  // recorded as not taken).
  GuardianEnforcer enforcer;
  // `netbox launch --ask`: a destination its policy does not list is asked of a person
  // (approval.hpp) instead of refused at once. Unset: refused at once.
  std::optional<AskSettings> ask;
  // With ask: who is told of its questions as they come and end (the launch's terminal
  // prompt, embedded; the registration connection of a shared proxy's launcher). Unset:
  // nobody but the readers of pending questions (control socket, admin API).
  AskListener ask_listener;
};

// What attach_agent did, for detach_agent to undo: a value the caller keeps.
struct AttachedAgent {
  boost::asio::ip::address addr;
  std::string name;
  std::optional<boost::asio::ip::tcp::endpoint> listener;  // the one the agent uses
  bool listener_added = false;  // bound by attach_agent, so detach_agent closes it
  std::optional<boost::asio::ip::tcp::endpoint> socks_listener;  // the agent's SOCKS5 listener
  bool socks_listener_added = false;
  std::int64_t pid = 0;
  bool row_opened = false;  // an agents row was opened, so detach_agent ends it
  bool dns_view = false;    // serves DNS, so detach_agent stops it
  // With a DNS view: where the agent's captured TCP connections go (its namespace DNATs
  // every outgoing TCP connection here), on the listener's address.
  std::optional<boost::asio::ip::tcp::endpoint> transparent;
  // With AgentAttachment::ipv6: the agent's IPv6 address and its capture listener there
  // (the same port as `transparent`).
  std::optional<boost::asio::ip::address> addr6;
  std::optional<boost::asio::ip::tcp::endpoint> transparent6;
  // With a DNS view: the synthetic pools it answers from. The attachment's, unless another
  // attached agent held them: then the next free blocks of their size.
  std::optional<policy::Cidr> dns_pool;
  std::optional<policy::Cidr> dns_pool6;
  // Attached by its sockets (AgentAttachment::sockets): its network namespace's cookie
  // (SO_NETNS_COOKIE), which keys its listeners, view and identity here. 0: by address.
  std::uint64_t netns = 0;
};

// How the agent ended, for its agents row.
struct AgentEnd {
  std::optional<int> exit_status;  // shell convention; none when unknown
  std::string resource_usage;      // a JSON object as text; empty: none
};

}  // namespace netbox::proxy
