#pragma once
// The agent's way to its proxy (issue 24): listening sockets the launcher makes inside the
// agent's own network namespace, which has no device leading out of it (loopback only).
// The proxy takes them over (proxy::AgentSockets) and dials upstream from its own
// namespace; whatever connects to them can only be this agent, so they are its identity.
#include "netbox/launcher/proxy_ports.hpp"
#include "netbox/proxy/agent_attachment.hpp"

#include <sys/types.h>

#include <string>

namespace netbox::launcher {

// Where the agent finds the proxy: its HTTP_PROXY and ALL_PROXY host, and its resolv.conf's.
inline constexpr const char* kLinkProxyAddress = "127.0.0.1";
inline constexpr const char* kLinkDnsAddress = "127.0.0.53";
// An IPv6 address of the agent's own on lo (with the DNS view), so AI_ADDRCONFIG sees IPv6.
inline constexpr const char* kLinkLocalAddress6 = "fd00:6e62:7800::53";

// The sockets, owned: closed on destruction (the proxy holds its own duplicates).
class AgentLink {
 public:
  AgentLink() = default;
  AgentLink(AgentLink&& o) noexcept : sockets_(o.sockets_), ports_(o.ports_) { o.sockets_ = {}; }
  AgentLink& operator=(AgentLink&& o) noexcept;
  AgentLink(const AgentLink&) = delete;
  ~AgentLink();

  // Made from a thread that enters the network namespace of `pid` (the agent's init, which
  // sets up the rest meanwhile): loopback up; HTTP proxy (3128) and SOCKS5 (1080) listeners
  // on 127.0.0.1 and ::1; with `capture`, the capture socket on both, the DNS view's UDP
  // and TCP sockets on 127.0.0.53:53, the local default routes and the namespace's
  // nftables rules (install_link_rules); without, rules that leave loopback only.
  // Throws std::runtime_error naming the step.
  static AgentLink make(pid_t pid, bool capture);

  const proxy::AgentSockets& sockets() const { return sockets_; }
  const ProxyPorts& ports() const { return ports_; }

 private:
  proxy::AgentSockets sockets_;
  ProxyPorts ports_;
};

}  // namespace netbox::launcher
