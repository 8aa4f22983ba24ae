#pragma once
// The confined child: cloned into new network, PID, mount, IPC and UTS namespaces, it
// sets up its namespaces while the launcher attaches it to the proxy (send_ports, release:
// the protocol is child_pipes.hpp), and
// becomes a tiny init (PID 1, in a session of its own) that forks the agent, forwards
// signals to it and exits with its status. The agent starts a session of its own,
// drops everything and execs the command.
#include "netbox/launcher/child_pipes.hpp"
#include "netbox/launcher/mounts.hpp"
#include "netbox/launcher/proxy_ports.hpp"
#include "netbox/launcher/privileges.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/seccomp_profile.hpp"

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netbox::launcher {

struct ChildSpec {
  // The proxy's address in the agent's namespace (kLinkProxyAddress): its sockets are made
  // there (agent_link.hpp), with its rules and routes, by the launcher; the child sets up
  // no link, address or rule of its own.
  std::string host_addr;
  std::vector<std::string> command;
  AgentUser user;
  std::map<std::string, std::string> launcher_env;
  std::vector<std::string> keep_env;
  std::vector<std::string> set_env;
  std::map<std::string, std::string> placeholders;  // credentials' variables: placeholders, set last
  std::vector<RlimitSetting> rlimits;
  std::vector<sock_filter> seccomp;  // compiled program; empty: none
  std::string hostname;              // the agent's name, cut to what the kernel takes
  bool dns_view = false;             // the proxy answers DNS on host_addr port 53 (UDP and TCP)
  AgentMounts mounts;
  HiddenPaths hidden;                // netbox's own files, hidden once the proxy has them open
  std::string cwd;                   // the launcher's, looked up again in the agent's view; empty: HOME
  bool commit_workdir = false;       // --commit: the workdir overlay is copied back at exit
  std::array<int, 3> stdio{0, 1, 2};  // the agent's 0, 1, 2 (see AgentStdio)
  int controlling_terminal = -1;     // which of them is the pty slave to make the agent's terminal
};

class ConfinedChild {
 public:
  // Clones the child. Call while the launcher is single-threaded: the child keeps
  // using the heap (netlink, nftables) before it execs.
  static ConfinedChild spawn(const ChildSpec& spec);
  ConfinedChild(ConfinedChild&& other) noexcept;
  ConfinedChild& operator=(ConfinedChild&&) = delete;
  ConfinedChild(const ConfinedChild&) = delete;
  ~ConfinedChild();  // kills and reaps a child that was never supervised

  pid_t pid() const { return pid_; }
  // Tells the child the proxy's ports (the proxy holds the agent's sockets and its audit
  // store is open), so it hides netbox's files meanwhile.
  void send_ports(const ProxyPorts& ports);
  // Call once the launcher's setup is done: lets the child fork the agent, and waits
  // until its namespaces are set up. Throws LaunchError(125) with the child's reason
  // when setup failed.
  void release();
  // Waits until the agent has exec'd. Throws LaunchError 127/126/125 when it could not.
  void wait_for_exec();
  // The launcher supervises (and reaps) the child from here on.
  void hand_over() { owned_ = false; }
  // Kills a child that was never supervised and reaps it now (PID 1 of its namespace:
  // once reaped, nothing of the agent runs any more); then the destructor has nothing to do.
  void kill_and_reap() noexcept;
  // Once the child has been reaped: the bytes the agent wrote into the --workdir-quota
  // overlay, as the init counted them; none without an overlay, or when the init was
  // killed before it could count.
  std::optional<std::uint64_t> workdir_bytes_written();

 private:
  explicit ConfinedChild(ChildPipes pipes) : pipes_(std::move(pipes)) {}
  pid_t pid_ = -1;
  ChildPipes pipes_;  // the launcher's ends
  bool owned_ = true;
  std::string command0_;
};

}  // namespace netbox::launcher
