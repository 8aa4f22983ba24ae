// `netbox proxy`: run the egress proxy in the foreground until SIGTERM/SIGINT.
// SIGHUP, or a change of the policy file, reloads the policy (the Server follows it). Every flag may also come
// from the config file (/etc/netbox/proxy.json, or --config FILE); a flag given wins.
#include "commands.hpp"
#include "config_file.hpp"
#include "flag_table.hpp"
#include "service_notify.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/printable.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/verify.hpp"
#include "netbox/audit/spool_summary.hpp"
#include "netbox/audit/writer.hpp"
#include "netbox/dashboards/proxy_admin.hpp"
#include "netbox/export/exporter.hpp"
#include "netbox/policy/load.hpp"
#include "netbox/proxy/endpoint.hpp"
#include "netbox/proxy/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace netbox::cli {
namespace {

namespace asio = boost::asio;

constexpr const char* kDefaultConfig = "/etc/netbox/proxy.json";

struct ProxyArgs {
  std::string config = kDefaultConfig;
  std::string policy;
  std::vector<std::string> listen;
  std::string audit_db;  // empty: audit::default_db_path()
  std::size_t audit_queue = 65536;
  std::size_t audit_hold = 16384;
  std::string audit_spool;  // empty: next to the default store, when --audit-db is PostgreSQL
  std::size_t audit_spool_size = std::size_t{256} << 20;
  std::optional<std::chrono::milliseconds> audit_shutdown_wait;
  std::optional<std::chrono::milliseconds> audit_retention;
  std::string proxy_id;  // empty: the host name
  std::string audit_signing_key;  // empty: audit batches unsigned
  std::vector<std::string> dns;
  unsigned threads = 0;
  std::string control;
  std::string log_format = "text";
  std::string metrics_agent_label = "profile";
  std::string admin;             // ADDR:PORT of the admin endpoint; empty: off
  std::string admin_token_file;
  bool admin_insecure = false;   // serve the admin endpoint without a token, on purpose
  bool audit_sync = false;
  std::string ca_dir;       // TLS inspection: the netbox CA; empty: no inspection
  std::string upstream_ca;  // an extra trust anchor for inspected upstreams
  std::vector<std::string> subnets;  // empty: the launcher's default pool
  std::size_t max_client_connections = 0;
  std::size_t max_client_connections_per_agent = 0;
  std::vector<std::string> exports;  // --export SINK, repeatable
  std::string client_tokens;  // the token book; empty: no client tokens
  std::string listen_cert, listen_key;   // the listeners' TLS; empty: plain HTTP
  std::string client_ca, client_certs;   // client certificates asked for on them; empty: none
  bool allow_anonymous = false;
};

// ADDR:PORT of a flag or config key (proxy::parse_endpoint); UsageError names where it came from.
boost::asio::ip::tcp::endpoint flag_endpoint(const std::string& source, const std::string& text, proxy::PortZero zero) {
  try {
    return proxy::parse_endpoint(text, zero);
  } catch (const std::invalid_argument& e) {
    throw UsageError(source + " " + e.what());
  }
}

// The listeners' TLS (--listen-cert, --listen-key, --client-ca, --client-certs): flags that
// only make sense together are refused apart. The files themselves are read by the Server,
// whose errors name the flag and the file.
std::optional<proxy::ListenerTlsFiles> listener_tls(const ProxyArgs& a, const FlagTable& flags) {
  if (a.listen_cert.empty() != a.listen_key.empty())
    throw UsageError(flags.source(a.listen_cert.empty() ? "--listen-key" : "--listen-cert") +
                     " needs " + (a.listen_cert.empty() ? "--listen-cert FILE" : "--listen-key FILE") +
                     " (the listener's certificate chain and its key)");
  if (a.client_ca.empty() != a.client_certs.empty())
    throw UsageError(flags.source(a.client_ca.empty() ? "--client-certs" : "--client-ca") + " needs " +
                     (a.client_ca.empty() ? "--client-ca FILE" : "--client-certs FILE") +
                     " (the CA that signs client certificates and the book that maps their subjects)");
  if (a.listen_cert.empty()) {
    if (!a.client_ca.empty()) throw UsageError(flags.source("--client-ca") + " needs --listen-cert FILE and --listen-key FILE");
    return std::nullopt;
  }
  proxy::ListenerTlsFiles f{a.listen_cert, a.listen_key, std::nullopt, std::nullopt};
  if (!a.client_ca.empty()) {
    f.client_ca = a.client_ca;
    f.client_certs = a.client_certs;
  }
  return f;
}

// Turns the arguments into the proxy's options; UsageError names the flag, or the config
// file and key, that gave a bad value.
// A PostgreSQL store's spool: the flag's file, checked as an SQLite --audit-db is, or one per
// proxy id beside the default SQLite store (created 0700 as that one's directory).
std::filesystem::path spool_location(const ProxyArgs& a, const proxy::ProxyOptions& o, const FlagTable& flags) {
  if (!a.audit_spool.empty()) {
    audit::check_db_location(a.audit_spool, flags.source("--audit-spool"));
    return a.audit_spool;
  }
  const auto spool = audit::default_spool_path(o.proxy_id.empty() ? audit::default_proxy_id() : o.proxy_id);
  audit::prepare_default_location(spool, "--audit-spool (default)");
  return spool;
}

proxy::ProxyOptions to_options(const ProxyArgs& a, const FlagTable& flags) {
  proxy::ProxyOptions o;
  if (a.policy.empty())
    throw UsageError("--policy is required (or the key policy in " + a.config + ")");
  o.policy_file = a.policy;
  if (!audit::is_postgresql(a.policy)) o.ask_policy_file = a.policy;  // --ask's scope policy writes there
  if (audit::is_postgresql(a.policy)) {
    // The latest version published there (docs/fleet.md); a password in it is refused, as
    // for --audit-db, before anything connects.
    try {
      audit::check_postgresql_address(a.policy, flags.source("--policy"));
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
  o.reload_on_sighup = true;  // and the file is watched (ProxyOptions)
  const auto listens = a.listen.empty() ? std::vector<std::string>{"127.0.0.1:3128"} : a.listen;
  for (const auto& l : listens) o.listen.push_back(flag_endpoint(flags.source("--listen"), l, proxy::PortZero::allowed));
  for (const auto& d : a.dns) {
    const auto ep = flag_endpoint(flags.source("--dns-server"), d, proxy::PortZero::refused);
    o.dns_servers.emplace_back(ep.address(), ep.port());
  }
  if (a.audit_queue == 0) throw UsageError(flags.source("--audit-queue") + ": expected a positive number of rows");
  o.audit_queue = a.audit_queue;
  o.audit_hold = a.audit_hold;
  if (a.audit_spool_size == 0)
    throw UsageError(flags.source("--audit-spool-size") + ": expected a positive number of bytes");
  o.audit_spool_size = a.audit_spool_size;
  if (!a.audit_spool.empty() && !a.audit_db.empty() && !audit::is_postgresql(a.audit_db))
    throw UsageError(flags.source("--audit-spool") + ": a spool is for a PostgreSQL --audit-db (postgresql://...); "
                     "an SQLite store is local already");
  o.audit_shutdown_wait = a.audit_shutdown_wait.value_or(std::chrono::seconds(10));
  if (a.audit_retention) o.audit_retention = std::chrono::duration_cast<std::chrono::seconds>(*a.audit_retention);
  o.threads = a.threads;
  o.audit_sync = a.audit_sync;
  if (!a.proxy_id.empty()) {
    // Stored with every row and every chain link: PostgreSQL keeps only UTF-8 text (one byte
    // that is not would make every batch fail), and `netbox audit verify` prints it.
    if (audit::needs_escaping(a.proxy_id))
      throw UsageError(flags.source("--proxy-id") + " " + audit::escape_controls(a.proxy_id) +
                       ": expected printable UTF-8 text (no control characters)");
    o.proxy_id = a.proxy_id;
  }
  if (!a.audit_signing_key.empty()) {
    try {
      audit::check_signing_key(a.audit_signing_key, flags.source("--audit-signing-key"));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    o.audit_signing_key = a.audit_signing_key;
  }
  if (!a.ca_dir.empty()) o.ca_dir = a.ca_dir;
  if (!a.upstream_ca.empty()) {
    if (a.ca_dir.empty()) throw UsageError(flags.source("--upstream-ca") + " needs --ca-dir DIR (TLS inspection)");
    o.upstream_ca = a.upstream_ca;
  }
  if (!a.control.empty()) o.control_socket = a.control;
  if (!a.client_tokens.empty()) o.client_tokens = a.client_tokens;
  o.listen_tls = listener_tls(a, flags);
  if (a.allow_anonymous && a.client_tokens.empty() && a.client_certs.empty())
    throw UsageError(flags.source("--allow-anonymous") +
                     " needs --client-tokens FILE or --client-certs FILE (without them every client not launched is anonymous)");
  o.allow_anonymous = a.allow_anonymous;
  if (!a.subnets.empty()) o.launch_subnets.clear();
  for (const auto& s : a.subnets) {
    auto c = policy::Cidr::parse(s);
    if (!c) throw UsageError(flags.source("--subnet") + " " + s + ": expected a network such as 10.213.0.0/16");
    o.launch_subnets.push_back(*c);
  }
  if (!a.subnets.empty()) o.launch_subnets.push_back(proxy::ProxyOptions::default_ipv6_link_range());
  o.max_client_connections = a.max_client_connections;
  o.max_client_connections_per_agent = a.max_client_connections_per_agent;
  o.log_format = a.log_format == "json" ? proxy::LogFormat::json : proxy::LogFormat::text;
  o.metrics_agent_label = a.metrics_agent_label == "none"   ? proxy::MetricsAgentLabel::none
                          : a.metrics_agent_label == "name" ? proxy::MetricsAgentLabel::name
                                                            : proxy::MetricsAgentLabel::profile;
  if (a.admin.empty() && !a.admin_token_file.empty())
    throw UsageError(flags.source("--admin-token-file") + " needs --admin ADDR:PORT");
  if (a.admin.empty() && a.admin_insecure) throw UsageError(flags.source("--admin-insecure") + " needs --admin ADDR:PORT");
  if (!a.admin_token_file.empty() && a.admin_insecure)
    throw UsageError(flags.source("--admin-insecure") + " and " + flags.source("--admin-token-file") +
                     " contradict each other; give one");
  // The API serves the whole audit (hosts, agents, paths) and /metrics the agents' names
  // and hosts, while the store itself is root:netbox 0640: a port any local user reaches
  // must not hand it out unless asked for in so many words.
  if (!a.admin.empty() && a.admin_token_file.empty() && !a.admin_insecure)
    throw UsageError(flags.source("--admin") +
                     " would serve the audit and the metrics to every local user: give --admin-token-file FILE "
                     "(first line: the bearer token, mode 0600), or --admin-insecure to serve them to anyone who "
                     "can reach " + a.admin);
  return o;
}

// The --export sinks, each checked and opened before anything else starts: a bad value, or
// a file that cannot be created, is a usage error naming the flag and the value.
std::shared_ptr<siem::Exporter> start_export(const ProxyArgs& a, const FlagTable& flags) {
  if (a.exports.empty()) return nullptr;
  std::vector<siem::SinkSpec> sinks;
  for (const auto& text : a.exports) {
    try {
      sinks.push_back(siem::parse_sink(text));
      if (sinks.back().kind == siem::SinkSpec::Kind::ocsf_jsonl)  // the audit store's checks
        audit::check_db_location(sinks.back().path, flags.source("--export") + " " + text);
    } catch (const audit::DatabaseRejected& e) {
      throw UsageError(e.what());
    } catch (const std::exception& e) {
      throw UsageError(flags.source("--export") + " " + e.what());
    }
  }
  siem::ExporterOptions options;
  options.product.version = version();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) options.product.proxy_id = host;
  try {
    return std::make_shared<siem::Exporter>(std::move(sinks), std::move(options));
  } catch (const std::exception& e) {
    throw UsageError(flags.source("--export") + " " + e.what());
  }
}

int run_proxy(const ProxyArgs& a, FlagTable& flags) {
  // It holds the agents' credential secrets (from their launchers) and the CA key: no
  // core file, and no ptrace or /proc/PID/mem reading by a process of the same user
  // without CAP_SYS_PTRACE.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  proxy::ProxyOptions o;
  std::optional<boost::asio::ip::tcp::endpoint> admin_ep;
  bool config_read = false;
  try {
    config_read = apply_config_file(flags, a.config, flags.command().get_option("--config")->count() > 0);
    o = to_options(a, flags);
    if (!a.admin.empty()) admin_ep = flag_endpoint(flags.source("--admin"), a.admin, proxy::PortZero::allowed);
  } catch (const UsageError& e) {
    return usage_error(flags.command(), e.what());
  }

  std::string admin_token;
  try {
    if (a.audit_db.empty()) {
      o.audit_db = audit::default_db_path();
      audit::prepare_default_location(o.audit_db, "--audit-db (default)");
    } else {
      o.audit_db = a.audit_db;
      audit::check_db_location(o.audit_db, flags.source("--audit-db"));
    }
    if (audit::is_postgresql(o.audit_db.native())) o.audit_spool = spool_location(a, o, flags);
    if (!a.admin_token_file.empty()) admin_token = dashboards::read_token_file(a.admin_token_file);
  } catch (const std::exception& e) {
    std::cerr << "netbox proxy: " << e.what() << "\n";
    return 2;
  }

  const auto audit_db = o.audit_db;
  try {
    o.exporter = start_export(a, flags);
  } catch (const UsageError& e) {
    std::cerr << "netbox proxy: " << e.what() << "\n";
    return 2;
  }
  const auto exporter = o.exporter;  // outlives the server, so rows of its shutdown are exported
  // Taken before anything listens: a SIGTERM as soon as the port answers (systemd stopping
  // a unit that just started, a test) is kept for the handler below, not the default
  // action that ends the process uncleanly (143, rows unwritten).
  asio::io_context ioc;
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  asio::signal_set hangup(ioc, SIGHUP);  // likewise: SIGHUP's default action ends the process
  std::unique_ptr<proxy::Server> server;
  std::unique_ptr<dashboards::AdminServer> admin;
  try {
    server = std::make_unique<proxy::Server>(std::move(o));
    // The first line, in the log's own format.
    server->log(proxy::LogLevel::info, "starting",
                {{"version", version()}, {"commit", commit()}, {"pid", ::getpid()},
                 proxy::LogField::text_or_null("config", config_read ? a.config : "")});
    server->start();
    if (admin_ep) {
      admin = dashboards::start_admin(*server, *admin_ep, audit_db, admin_token);
      std::ostringstream where;
      where << admin->local_endpoint();
      server->log(proxy::LogLevel::info, "admin_listening", {{"address", where.str()}, {"url", "http://" + where.str() + "/"}});
    }
  } catch (const policy::PolicyError& e) {
    std::cerr << "netbox proxy: --policy: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "netbox proxy: " << e.what() << "\n";
    return 2;
  }

  // SIGHUP also reloads the policy (the Server's own handler); here it reopens export files
  // that logrotate moved.
  std::function<void()> on_hangup;
  if (exporter) {
    on_hangup = [&] {
      hangup.async_wait([&](boost::system::error_code ec, int) {
        if (ec) return;
        exporter->reopen();
        on_hangup();
      });
    };
    on_hangup();
  }
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    notify_service_manager("STOPPING=1");
    // stop() waits out the grace period; run it off this thread's handler chain.
    server->stop();
    hangup.cancel();
  });
  // Listeners are bound and the store is open: a Type=notify unit may start its clients.
  notify_service_manager("READY=1\nSTATUS=proxying");
  ioc.run();
  server->wait();
  if (admin) admin->stop();
  server.reset();  // drains the audit queue
  return 0;
}

}  // namespace

void add_proxy_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("proxy", "Run the egress HTTP/CONNECT proxy (foreground; SIGHUP reloads the policy)");
  auto cmd = std::make_shared<Bound<ProxyArgs>>(*sub);
  auto& a = cmd->args;
  auto& f = cmd->flags;
  sub->add_option("--config", a.config,
                  "Config file: a JSON object whose keys are these flags without their dashes (\"audit-db\": PATH); "
                  "flags given here win (default /etc/netbox/proxy.json, skipped when missing)");
  f.option("--policy", a.policy,
           "Policy file (JSON, version 1), or postgresql://... for the latest version `netbox policy push` published "
           "there; reloaded on SIGHUP and when it changes (required)");
  f.option("--listen", a.listen, "Listen address ADDR:PORT, repeatable (default 127.0.0.1:3128; port 0 picks one)");
  f.option("--audit-db", a.audit_db,
           "Audit store: an SQLite file (default: /var/lib/netbox/audit.db as root, else "
           "$XDG_STATE_HOME/netbox/audit.db; its directory must be writable by its owner only) or a PostgreSQL "
           "server, postgresql://USER@HOST:PORT/DB (the password from PGPASSFILE or PGPASSWORD, never here)");
  f.option("--proxy-id", a.proxy_id, "Name stored with every audit row this proxy writes (default: the host name)");
  f.option("--audit-signing-key", a.audit_signing_key,
           "Ed25519 private key (PEM, openssl genpkey -algorithm ed25519): signs the audit chain's last link of every "
           "batch; netbox audit verify --audit-verify-key checks it (default: unsigned)");
  f.option("--audit-queue", a.audit_queue,
           "Audit rows queued before clients are read no further until the writer catches up (default 65536)");
  f.option("--audit-hold", a.audit_hold,
           "Audit rows held in memory while the store cannot write; past them new requests get 503 (default 16384)");
  f.option("--audit-spool", a.audit_spool,
           "With a PostgreSQL --audit-db: the local SQLite spool that takes the rows while the server cannot, shipped "
           "in order once it returns (default: audit-spool-PROXYID.db beside the default SQLite store; its directory "
           "must be writable by its owner only)");
  f.option("--audit-spool-size", a.audit_spool_size,
           "Bytes the audit spool may hold; when it is full new requests get 503 (default 268435456)");
  f.duration("--audit-retention", a.audit_retention,
           "Prune rows older than this DURATION (30d, 12h, 1w ...) at start and hourly, in small batches beside the "
           "inserts; each run is an audit_prune event (default: keep everything)",
             policy::BareNumber::refused);
  f.duration("--audit-shutdown-wait", a.audit_shutdown_wait,
           "How long (a DURATION; default 10s) shutdown waits for a failing audit store to take the rows it holds");
  f.flag("--audit-sync", a.audit_sync,
         "Strict audit: forward a request only after its decision row is durable (SQLite synchronous=FULL; "
         "PostgreSQL: committed on the server)");
  f.option("--ca-dir", a.ca_dir,
           "The netbox CA's folder (`netbox ca init`), for TLS inspection of the hosts a policy's inspect names "
           "(default: none; a policy with inspect is then refused)");
  f.option("--upstream-ca", a.upstream_ca,
           "A PEM file of extra trust anchors for inspected upstreams, beside the system store (needs --ca-dir)");
  f.option("--dns-server", a.dns, "DNS server ADDR:PORT, repeatable (default: /etc/resolv.conf)");
  f.option("--threads", a.threads, "I/O threads (default: one per core)")->check(CLI::Range(0u, 256u));
  f.option("--control", a.control, "Unix control socket for `netbox launch` registrations (mode 0600)");
  f.option("--client-tokens", a.client_tokens,
           "The token book (`netbox token create`): a client netbox did not launch must show one of its tokens as "
           "its proxy password, else 407 (default: none; such clients are anonymous)");
  f.flag("--allow-anonymous", a.allow_anonymous,
         "With --client-tokens or --client-certs: a client that shows no token or certificate is still served, as "
         "anonymous under the top-level profile (a bad one never is)");
  f.option("--listen-cert", a.listen_cert,
           "A PEM certificate chain: the --listen listeners speak TLS (an HTTPS proxy; needs --listen-key)");
  f.option("--listen-key", a.listen_key, "The PEM private key of --listen-cert");
  f.option("--client-ca", a.client_ca,
           "A PEM file of CA certificates: clients of the TLS listeners must show a certificate one of them signed "
           "(needs --listen-cert and --client-certs)");
  f.option("--client-certs", a.client_certs,
           "The certificate book: which agent and profile each client certificate's subject (CN or URI SAN) is; "
           "else 407 (needs --client-ca)");
  f.option("--subnet", a.subnets,
           "The launchers' subnet pool (their --subnet), repeatable (default 10.213.0.0/16): no request through "
           "the proxy may reach it");
  f.option("--max-client-connections", a.max_client_connections,
           "Agent connections open at once, in total (default: from the descriptor limit)");
  f.option("--max-client-connections-per-agent", a.max_client_connections_per_agent,
           "Agent connections open at once from one client address (default 512, or a quarter of the total)");
  f.option("--metrics-agent-label", a.metrics_agent_label,
           "What the agent label of netbox_requests_total says: profile (default; bounded by the policy), "
           "name (one series per launch), or none")
      ->check(CLI::IsMember({"none", "profile", "name"}));
  f.option("--log-format", a.log_format,
           "Log format on stderr: text, or json (one object per line, the first included; numbers typed, "
           "a level, request fields named like the audit columns)")
      ->check(CLI::IsMember({"text", "json"}));
  f.option("--admin", a.admin,
           "Admin endpoint ADDR:PORT: /metrics, /healthz, /readyz, /api/*, and the dashboard at / (off by default)");
  f.option("--admin-token-file", a.admin_token_file,
           "File whose first line is the admin bearer token (mode 0600); probes stay open. --admin needs it "
           "or --admin-insecure");
  f.flag("--admin-insecure", a.admin_insecure,
         "Serve --admin with no token: the audit and metrics to anyone who can reach it (off by default)");
  f.option("--export", a.exports,
           "Export completed audit rows and agent events as OCSF records, repeatable: ocsf-jsonl:PATH (a file, "
           "one record a line, created like the audit store and reopened on SIGHUP) or otlp-http://HOST:PORT "
           "(OTLP/HTTP JSON logs to HOST:PORT/v1/logs); bounded, never slows the proxy, drops are counted");
  sub->callback([cmd, &rc] { rc = run_proxy(cmd->args, cmd->flags); });
}

}  // namespace netbox::cli
