#pragma once
// How a proxy is configured: the values `netbox proxy` and `netbox launch` (embedded mode)
// build a Server from. Apart from server.hpp, so the proxy's own sources (which a Server
// runs) include their options without the Server above them.
#include "netbox/policy/policy.hpp"
#include "netbox/proxy/approval.hpp"
#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/log_field.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::siem { class Exporter; }

namespace netbox::proxy {

enum class LogFormat { text, json };
// What the `agent` label of netbox_requests_total says. Agent names are new with every
// launch, so labelling by name grows Prometheus's series without end on a long-running
// proxy: the profile (a handful per policy) is the default.
enum class MetricsAgentLabel { none, profile, name };
// Which `request` lines the log gets: every one, only refusals and failures (what an
// operator watching one agent needs to see), or none. Other events are always logged.
enum class LogRequests { all, refusals, none };
// How a CONNECT tunnel moves bytes: splice(2) through a pipe, so they never enter user
// space, or a plain buffer in user space (for comparisons; also used when no pipe can be had).
enum class TunnelRelay { splice, buffer };
// What a listener speaks: HTTP (forward and CONNECT), the same inside TLS (an HTTPS proxy:
// ProxyOptions::listen_tls), or SOCKS5 (CONNECT only).
enum class ListenerKind { http, https, socks };

// The proxy's own listeners over TLS (issue 26 item 5): its certificate chain and key
// (PEM), and, to require client certificates, the CA that signs them and the book mapping
// their subjects to agents (netbox/tokens/cert_book.hpp). Launched agents' listeners stay plain.
struct ListenerTlsFiles {
  std::filesystem::path cert;
  std::filesystem::path key;
  std::optional<std::filesystem::path> client_ca;     // with client_certs, or neither
  std::optional<std::filesystem::path> client_certs;
};

struct ProxyOptions {
  std::vector<boost::asio::ip::tcp::endpoint> listen;   // port 0 picks a free port
  std::filesystem::path policy_file;                     // followed as the two below say
  std::optional<policy::Policy> policy;                  // used instead of policy_file when set
  // How the server follows policy_file once started (the effect is reload_policy()'s):
  // watched with inotify on its folder, so saving it reloads it, editors that write a new
  // file and rename it included (once the folder has been quiet for 200 ms, and only when
  // the file is not the one last loaded); and, when asked, reloaded on SIGHUP. SIGHUP is
  // the process's: only a process running one Server should ask (`netbox proxy` does).
  bool watch_policy_file = true;
  bool reload_on_sighup = false;
  std::filesystem::path audit_db = "netbox-audit.db";
  std::vector<boost::asio::ip::udp::endpoint> dns_servers;  // empty: /etc/resolv.conf
  unsigned threads = 0;                                  // 0: one per core
  std::optional<std::filesystem::path> control_socket;  // Unix socket, JSON lines (control_protocol.hpp)
  // The control socket answers the operator ops only (`netbox agent`; a launch's own
  // operator socket, whose one agent is attached in-process): no registration there.
  bool control_operator_only = false;
  // Client tokens (`--client-tokens`, issue 26 item 5): a client that would be `anonymous`
  // must show a token from this book, unless allow_anonymous (client_tokens.hpp). Unset: no
  // tokens, and such clients are `anonymous` under the top-level profile, as before.
  std::optional<std::filesystem::path> client_tokens;
  // `--listen-cert`/`--listen-key` (and `--client-ca`/`--client-certs`): `listen` speaks TLS.
  std::optional<ListenerTlsFiles> listen_tls;
  bool allow_anonymous = false;  // a client that shows no token (or no certificate) is anonymous
  std::chrono::milliseconds shutdown_grace{5000};
  LogFormat log_format = LogFormat::text;
  LogRequests log_requests = LogRequests::all;
  int log_fd = 2;  // where log lines go (stderr); the caller keeps another descriptor open
  MetricsAgentLabel metrics_agent_label = MetricsAgentLabel::profile;
  TunnelRelay tunnel_relay = TunnelRelay::splice;
  // Strict audit: a request is forwarded (or a tunnel opened) only once its decision row is
  // committed with PRAGMA synchronous=FULL, so a crash never loses the row of a forwarded
  // request. Costs one group commit of latency per new exchange.
  bool audit_sync = false;
  std::string proxy_id;  // stored with every audit row; empty: the host name
  std::filesystem::path audit_signing_key;  // --audit-signing-key: signs each audit batch's chain link; empty: none
  // TLS inspection (issue 16): the netbox CA's folder (`netbox ca init`), loaded at start
  // with all its checks; without it a policy using `inspect` is refused. upstream_ca adds
  // a trust anchor (PEM) to the system store for inspected upstreams.
  std::optional<std::filesystem::path> ca_dir;
  std::optional<std::filesystem::path> upstream_ca;
  // Audit writer bounds (audit::WriterOptions): rows queued before sessions stop reading
  // their clients until the writer catches up (back pressure, never a dropped row); rows
  // held while the store cannot write before new requests get 503; and how long shutdown
  // waits for a failing store to take them.
  std::size_t audit_queue = 65536;
  std::size_t audit_hold = 16384;
  // A PostgreSQL store's local spool (WriterOptions::spool_path; empty: none) and its bound.
  std::filesystem::path audit_spool;
  std::uint64_t audit_spool_size = std::uint64_t{256} << 20;
  // Rows a session that ignored back pressure could queue past audit_queue before insert()
  // refuses (WriterOptions::queue_overflow). No door ignores it; tests make it small to show so.
  std::size_t audit_overflow = 16384;
  std::chrono::milliseconds audit_shutdown_wait{10000};
  // Rows older than this are pruned hourly by the writer thread (0: keep everything).
  std::chrono::seconds audit_retention{0};
  bool audit_fold_refusals = true;  // repeated refusals of one agent into counted rows
  int audit_wal_close_limit = 0;  // WriterOptions::wal_close_limit_pages (an embedded launch's proxy)
  // The SIEM export (`--export`, export/): every completed row and agent event is handed
  // to it as well, without waiting. Null: none.
  std::shared_ptr<siem::Exporter> exporter;
  // The launcher's subnet pools (`netbox launch --subnet`): the host side of every
  // launch's veth lives there, with its embedded proxy and whatever host service listens
  // on 0.0.0.0. No request through the proxy may reach an address in them (rule `netbox`).
  // Every launch's IPv6 link addresses lie in default_ipv6_link_range(), whatever its --subnet.
  std::vector<policy::Cidr> launch_subnets{default_launch_subnet(), default_ipv6_link_range()};
  // Where agents' synthetic pools (their DNS views, AgentAttachment::dns_pool) may lie:
  // the benchmarking range, never a real destination (an internal range to the policy).
  // Attached agents' pools never overlap, so an address names one agent's mapping at most.
  policy::Cidr synthetic_range = default_synthetic_range();
  // The same for IPv6 pools (AgentAttachment::ipv6): the IPv6 benchmarking range.
  policy::Cidr synthetic_range6 = default_synthetic_range6();
  // Agent connections open at once, in total and per client address (one agent). A
  // connection over either is answered 503 and closed at once (counted in
  // client_connections_refused). 0 derives them: the total from the descriptor limit
  // (raised to its hard limit at start), half of what is left after kFdReserve since each
  // connection may hold an upstream one too; per agent 512, or a quarter of the total
  // when that is less, so one agent never takes every slot.
  std::size_t max_client_connections = 0;
  std::size_t max_client_connections_per_agent = 0;
  // The policy file an answer of scope `policy` adds the host to (then reloaded when it is
  // policy_file); empty: that scope is not offered.
  std::filesystem::path ask_policy_file;

  static policy::Cidr default_synthetic_range() { return {boost::asio::ip::make_address_v4("198.18.0.0"), 15}; }
  static policy::Cidr default_synthetic_range6() { return {boost::asio::ip::make_address_v6("2001:2::"), 48}; }
  static policy::Cidr default_launch_subnet() { return {boost::asio::ip::make_address_v4("10.213.0.0"), 16}; }
  // The launcher's kIpv6LinkRange (a unit test holds them equal).
  static policy::Cidr default_ipv6_link_range() { return {boost::asio::ip::make_address_v6("fd00:6e62:7800::"), 48}; }
  // Descriptors kept for what is not an agent connection: the audit database, the admin
  // endpoint, DNS, logs. Upstream dials never take the top ones (256, or a quarter of the
  // limit when that is less; dialer.hpp), so accepts and the audit store keep them.
  static constexpr std::size_t kFdReserve = 256;
};

}  // namespace netbox::proxy
