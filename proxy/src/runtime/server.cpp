// The Server: io threads, policy reloads (its listeners: listeners.cpp; its orderly
// shutdown: shutdown.cpp).
#include "netbox/proxy/server.hpp"

#include "netbox/proxy/enforceable_policy.hpp"

#include "inspect/inspector.hpp"

#include "agents/control_socket.hpp"
#include "base/fd_limit.hpp"
#include "runtime/policy_source.hpp"
#include "http/http_session.hpp"
#include "base/proxy_runtime.hpp"
#include "pipeline/target.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/policy/load.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <pthread.h>

#include <stdexcept>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string ep_text(const tcp::endpoint& ep) { return authority(ep.address().to_string(), ep.port()); }

std::string digest_detail(const std::string& digest) { return nlohmann::json{{"digest", digest}}.dump(); }

PolicyPtr initial_policy(const ProxyOptions& o, bool can_inspect) {
  auto p = o.policy ? std::make_shared<const policy::Policy>(*o.policy)
                    : std::make_shared<const policy::Policy>(load_policy_source(o.policy_file));
  check_enforceable(*p, can_inspect);
  return p;
}

}  // namespace

ProxyRuntime::ProxyRuntime(ProxyOptions opts)
    : DoorServices(std::move(opts)) {
  own.set_networks(options.launch_subnets);
  refresh_host();
  if (!options.policy) loaded_stamp = file_stamp(options.policy_file);  // before reading: a change after is seen
  if (options.ca_dir) inspector = std::make_unique<Inspector>(*options.ca_dir, options.upstream_ca);
  if (options.client_tokens)
    client_tokens = std::make_unique<ClientTokens>(
        *options.client_tokens, options.allow_anonymous, [this](bool ok, const std::string& text) {
          log.write(ok ? log_event::client_tokens_reloaded : log_event::client_tokens_unreadable,
                    {{log_key::file, options.client_tokens->string()}, {ok ? log_key::tokens : log_key::error, text}});
        });
  if (options.listen_tls)
    listener_tls = std::make_unique<ListenerTls>(
        *options.listen_tls, options.allow_anonymous, [this](bool ok, const std::string& text) {
          log.write(ok ? log_event::client_certs_reloaded : log_event::client_certs_unreadable,
                    {{log_key::file, options.listen_tls->client_certs->string()},
                     {ok ? log_key::certificates : log_key::error, text}});
        });
  policy.store(initial_policy(options, inspector != nullptr));
  note_policy_loaded();
  audit::WriterOptions wo;
  wo.db_path = options.audit_db;
  if (!options.proxy_id.empty()) wo.proxy_id = options.proxy_id;
  wo.signing_key = options.audit_signing_key;
  wo.synchronous_full = options.audit_sync;
  wo.queue_capacity = options.audit_queue;
  wo.held_while_failing = options.audit_hold;
  wo.spool_path = options.audit_spool;
  wo.spool_max_bytes = options.audit_spool_size;
  wo.queue_overflow = options.audit_overflow;
  wo.shutdown_grace = options.audit_shutdown_wait;
  wo.retention = options.audit_retention;
  wo.fold_refusals = options.audit_fold_refusals;
  wo.wal_close_limit_pages = options.audit_wal_close_limit;
  writer = std::make_unique<audit::Writer>(wo);
  const unsigned n = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto pool_share = per_thread(idle_pool, n);
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>();
    w->resolver = std::make_unique<Resolver>(w->ioc, options.dns_servers);
    w->pool = std::make_unique<UpstreamPool>(UpstreamPool::Bounds{pool_share.total, pool_share.per_agent});
    workers.push_back(std::move(w));
  }
  const auto p = current_policy();
  event("policy_load", "loaded policy " + p->source, digest_detail(p->digest));
}

ProxyRuntime::~ProxyRuntime() { stop(); }

void ProxyRuntime::start() {
  {
    std::lock_guard lock(state_mu);
    if (lifecycle != Lifecycle::created) return;
    lifecycle = Lifecycle::starting;
  }
  for (const auto& ep : options.listen) add_listener(ep, listener_tls ? ListenerKind::https : ListenerKind::http);
  host_refresh = std::make_unique<asio::steady_timer>(workers.front()->ioc);
  // Subscribed before the look below, so an address added in between is not missed.
  interface_watch = std::make_unique<InterfaceWatch>(workers.front()->ioc, [this] { refresh_host(); });
  asio::post(workers.front()->ioc, [this] {
    interface_watch->start();
    schedule_host_refresh();
  });
  refresh_host();  // the host and the registry as they are now, before the first request
  if (!options.policy && (options.watch_policy_file || options.reload_on_sighup)) {
    PolicyFollower::Hooks hooks;
    hooks.changed = [this] { return reload_if_changed(); };
    hooks.hangup = [this] { reload_policy(); };
    hooks.cannot_watch = [this](std::string why) {
      log.write(log_event::policy_watch_unavailable, {{log_key::file, options.policy_file.string()},
                                                      {log_key::reason, why},
                                                      {log_key::effect, "reloads only on request"}});
    };
    follower = std::make_unique<PolicyFollower>(options.policy_file, options.watch_policy_file,
                                                options.reload_on_sighup, std::move(hooks));
  }
  if (options.control_socket) {
    control = std::make_unique<ControlServer>(*this, workers.front()->ioc, *options.control_socket,
                                              options.control_operator_only);
    asio::post(workers.front()->ioc, [this] { control->start(); });
  }
  for (auto& w : workers) {
    w->guard.emplace(w->ioc.get_executor());
    w->thread = std::thread([wp = w.get()] {
      pthread_setname_np(pthread_self(), "netbox-io");  // shows in top -H, perf and gdb
      wp->ioc.run();
    });
  }
  for (const auto& ep : local_endpoints()) {
    if (listener_tls)
      log.write(log_event::listening, {{log_key::address, ep_text(ep)}, {log_key::protocol, "https"}});
    else
      log.write(log_event::listening, {{log_key::address, ep_text(ep)}});
  }
  log.write(log_event::connection_limits, {{log_key::descriptors, fd_limit},
                                           {log_key::agent_connections, client_slots->max_total()},
                                           {log_key::per_agent, client_slots->max_per_agent()},
                                           {log_key::idle_upstream, idle_pool.total},
                                           {log_key::idle_upstream_per_agent, idle_pool.per_agent},
                                           {log_key::io_threads, workers.size()},
                                           {log_key::dial_fd_ceiling, dial_fd_ceiling}});
  std::lock_guard lock(state_mu);
  if (lifecycle == Lifecycle::starting) lifecycle = Lifecycle::running;  // unless stop() came first
}

void ProxyRuntime::protect(const tcp::endpoint& ep) {
  own.add(ep);
  publish_endpoints();
}

void ProxyRuntime::publish_endpoints() {
  // Read and written under one lock, so two threads adding listeners cannot publish
  // their views out of order and leave an endpoint out of the file.
  std::lock_guard lock(publish_mu);
  const auto why = registry.publish(own.endpoints());
  if (!why.empty() && !publish_warned.exchange(true))
    log.write(log_event::endpoint_registry_unavailable,
              {{log_key::folder, registry.dir().string()},
               {log_key::reason, why},
               {log_key::effect, "other netbox proxies on this host do not know this one's endpoints"}});
}

void ProxyRuntime::refresh_host() {
  std::string problem;
  auto peers = registry.read_all(&problem);
  if (!problem.empty() && !registry_warned.exchange(true))
    log.write(log_event::endpoint_registry_unavailable,
              {{log_key::folder, registry.dir().string()}, {log_key::reason, problem}});
  own.set_host(host_interface_addresses(), std::move(peers));
}

// On the first io thread: getifaddrs and a handful of small files on tmpfs, once a second.
void ProxyRuntime::schedule_host_refresh() {
  host_refresh->expires_after(kHostRefresh);
  host_refresh->async_wait([this](boost::system::error_code ec) {
    if (ec || is_stopping()) return;
    refresh_host();
    schedule_host_refresh();
  });
}

void ProxyRuntime::note_policy_loaded() {
  policy_loaded_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool ProxyRuntime::reload_policy() {
  std::lock_guard lock(reload_mu);
  if (options.policy_file.empty()) {
    log.write(log_event::policy_reload_failed, {{log_key::reason, "the policy was given in-process, not as a file"}});
    return false;
  }
  loaded_stamp = file_stamp(options.policy_file);  // a bad file too: it is not read again until it changes
  try {
    auto next = std::make_shared<const policy::Policy>(load_policy_source(options.policy_file));
    check_enforceable(*next, inspector != nullptr);
    // A registered agent whose profile the new file lacks would be decided with the
    // top-level profile, which may allow what its own denied: never widen silently.
    if (const auto orphans = agents.profiles_missing_from(*next); !orphans.empty())
      throw std::runtime_error(options.policy_file.string() + ": " + orphans +
                               "; the reload would decide their requests with the top-level profile instead, so it "
                               "is refused (unregister those agents first, or keep their profiles)");
    const auto source = next->source.empty() ? options.policy_file.string() : next->source;
    const auto digest = next->digest;
    policy.store(std::move(next));
    note_policy_loaded();
    counters.policy_reloads_ok.fetch_add(1);
    event("policy_load", "reloaded policy " + source, digest_detail(digest));
    log.write(log_event::policy_load, {{log_key::file, source}, {log_key::digest, digest}});
    return true;
  } catch (const std::exception& e) {
    // A database that failed between its stamp and its text: forgotten, so the watch's
    // next try reads it again (a bad policy keeps its stamp, and is not read again).
    if (dynamic_cast<const SourceUnreadable*>(&e)) loaded_stamp.reset();
    counters.policy_reloads_failed.fetch_add(1);
    event("policy_reload_failed", e.what());
    log.write(log_event::policy_reload_failed, {{log_key::file, options.policy_file.string()},
                                                {log_key::reason, e.what()},
                                                {log_key::kept, "previous policy"}});
    return false;
  }
}

bool ProxyRuntime::reload_if_changed() {
  const bool database = is_database_source(options.policy_file);
  {
    std::lock_guard lock(reload_mu);
    const auto now = file_stamp(options.policy_file);
    if (database && !now) return false;  // unreadable now: asked again, not taken for a change
    if (now == loaded_stamp) return true;
  }
  reload_policy();
  std::lock_guard lock(reload_mu);
  return !database || loaded_stamp.has_value();
}

// ---- Server ----

Server::Server(ProxyOptions options) : impl_(std::make_unique<ProxyRuntime>(std::move(options))) {}
Server::~Server() = default;
void Server::start() { impl_->start(); }
void Server::stop() { impl_->stop(); }
void Server::wait() { impl_->wait(); }
bool Server::reload_policy() { return impl_->reload_policy(); }

void Server::register_agent(const asio::ip::address& addr, std::string agent, std::string profile) {
  impl_->register_agent(addr, std::move(agent), std::move(profile));
}

AttachedAgent Server::attach_agent(const AgentAttachment& attachment) {
  auto attached = impl_->attach_agent(attachment);
  impl_->guardians.enlist(attached.name, agent_card(attachment));  // the launcher's hand (embedded)
  return attached;
}
void Server::detach_agent(const AttachedAgent& agent, const AgentEnd& end) noexcept {
  impl_->guardians.delist(agent.name);
  impl_->detach_agent(agent, end);
}

std::vector<PendingAsk> Server::pending_asks() const { return impl_->approvals.pending(); }

std::string Server::answer_ask(const AskTarget& target, const AskAnswer& answer) {
  return impl_->approvals.answer(target, answer);
}

void Server::unregister_agent(const asio::ip::address& addr) { impl_->agents.remove(addr); }

tcp::endpoint Server::add_listener(const tcp::endpoint& ep, ListenerKind kind) { return impl_->add_listener(ep, kind); }
void Server::remove_listener(const tcp::endpoint& ep) { impl_->remove_listener(ep); }
std::vector<tcp::endpoint> Server::local_endpoints() const { return impl_->local_endpoints(); }
void Server::protect_endpoint(const tcp::endpoint& ep) { impl_->protect(ep); }
audit::Writer& Server::audit() { return *impl_->writer; }

void Server::log(LogLevel level, std::string_view event, LogFields fields) { impl_->log.write(level, event, fields); }

CountersSnapshot Server::counters() const {
  auto s = impl_->counters.snapshot();
  s.audit_queue_depth = impl_->writer->stats().queue_depth;
  if (impl_->options.exporter) s.exports = impl_->options.exporter->stats();
  s.audit_healthy = impl_->writer->healthy();
  s.attached_agents = impl_->agents.attached();
  s.policy_digest = impl_->current_policy()->digest;
  s.policy_loaded_at = impl_->policy_loaded_at.load();
  return s;
}

std::shared_ptr<const policy::Policy> Server::policy() const { return impl_->current_policy(); }

}  // namespace netbox::proxy
