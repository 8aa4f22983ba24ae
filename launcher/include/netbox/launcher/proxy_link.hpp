#pragma once
// The agent's proxy: an embedded netbox::proxy::Server, or a running `netbox proxy`
// reached over its control socket. Either way the launcher attaches the agent (the
// sockets made in the agent's namespace, agent_link.hpp, handed to the embedded proxy in
// memory or to a running one over its control socket with SCM_RIGHTS, and the `agents`
// row) and detaches it at exit.
#include "netbox/launcher/proxy_ports.hpp"
#include "netbox/launcher/supervisor.hpp"
#include "netbox/policy/policy.hpp"
#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/credential_secret.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::launcher {

class AskPrompt;

struct AgentIdentity {
  std::string name;
  std::string profile;
  pid_t pid = 0;
  std::string command_line;
  std::string policy_digest;
  std::string sandbox;  // render_report_json(): what the agents row records it ran under
  // Set: the proxy serves the agent the DNS view of its policy on its DNS sockets,
  // answering allowed names from this pool of synthetic addresses.
  std::optional<policy::Cidr> dns_pool;
  // With dns_pool: the synthetic IPv6 pool (AAAA answers).
  std::optional<policy::Cidr> dns_pool6;
  std::vector<proxy::CredentialSecret> credentials;  // the profile's secrets (credential_secrets.hpp)
  // The agent reaches the proxy through these sockets in its namespace (agent_link.hpp),
  // and has no address; the launcher keeps and closes them (the proxy keeps duplicates).
  std::optional<proxy::AgentSockets> sockets;
  // The hand on the agent's cgroup (freeze, resume, kill) for the guardian and operators: the
  // embedded proxy calls it in-process, a running one by an Act on the control connection.
  proxy::GuardianEnforcer enforcer;
  // --ask: how long its questions wait (AgentAttachment::ask); unset: refused at once.
  std::optional<proxy::AskSettings> ask;
};

// The synthetic addresses the DNS view hands out: the benchmarking range (RFC 2544),
// never a real destination. Per agent: each agent's proxy keeps its own mappings.
inline const policy::Cidr kSyntheticPool{boost::asio::ip::make_address("198.18.0.0"), 15};
// Its IPv6 twin for an agent on sockets (AAAA answers): a /80 of the IPv6 benchmarking range.
inline const policy::Cidr kSyntheticPool6{boost::asio::ip::make_address("2001:2::"), 80};

class ProxyLink {
 public:
  virtual ~ProxyLink() = default;
  // Work that needs no agent address yet (an embedded proxy opens its audit store and
  // starts its threads). The launcher runs it on a thread while it makes the sockets;
  // a failure is reported by attach. Must not be called before the child is cloned.
  virtual void prepare() {}
  // Takes the agent's sockets (AgentIdentity::sockets; the ports are theirs, AgentLink::ports)
  // and registers the agent. Throws LaunchError(125) when the proxy refuses.
  virtual void attach(const AgentIdentity& agent) = 0;
  // Records the agent's end and unregisters it. Never throws.
  virtual void detach(const AgentOutcome& outcome) noexcept = 0;
};

// Where the embedded proxy's log lines go and which requests it logs.
struct EmbeddedLog {
  int fd = 2;
  bool all_requests = false;  // else only refusals and failures
  bool quiet = false;         // no request lines at all
  bool json = false;          // JSON lines (for a ProxyLogRelay to read), else text
};
// `subnet` is the launch's --subnet pool: no request through this proxy may reach it.
// TLS inspection by the embedded proxy: the netbox CA (--ca-dir) and extra trust anchors
// for upstreams (--upstream-ca); none: no inspection.
struct EmbeddedInspection {
  std::optional<std::filesystem::path> ca_dir;
  std::optional<std::filesystem::path> upstream_ca;
};
// --ask with the embedded proxy: its questions are asked on the launch's terminal when the
// agent does not own it (ask_prompt.hpp); `policy_file`, the launch's --policy, is where an
// answer of scope `policy` writes (none: that scope is not offered).
struct EmbeddedAsk {
  bool ask = false;
  std::optional<std::filesystem::path> policy_file;
  bool quiet = false;  // --quiet: not even the hint on answering from another terminal
};
// `operator_socket`: where it answers `netbox agent` (operator_socket.hpp); none: nowhere.
std::unique_ptr<ProxyLink> make_embedded_proxy(policy::Policy policy, std::filesystem::path audit_db,
                                               policy::Cidr subnet, EmbeddedLog log = {},
                                               EmbeddedInspection inspection = {}, EmbeddedAsk ask = {},
                                               std::optional<std::filesystem::path> operator_socket = {});
// `prompt`: the launch's terminal, asking the agent's questions there (--ask, when the agent
// does not own it); null: the questions wait for `netbox agent approve` and the dashboard.
std::unique_ptr<ProxyLink> make_control_client(std::filesystem::path control_socket,
                                               std::unique_ptr<AskPrompt> prompt);

// What a running proxy keeps that its agents must not read, as it reports them ("info" on
// the control socket). Throws LaunchError(125) when the proxy cannot be reached.
struct RunningProxyFiles {
  std::optional<std::filesystem::path> policy;
  std::optional<std::filesystem::path> audit_db;
  std::string ca_pem;  // the CA it inspects with (public); empty: it does not inspect
};
RunningProxyFiles running_proxy_files(const std::filesystem::path& control_socket);

}  // namespace netbox::launcher
