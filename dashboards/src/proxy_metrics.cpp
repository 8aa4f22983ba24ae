#include "netbox/dashboards/proxy_metrics.hpp"

#include "netbox/dashboards/exposition.hpp"
#include "process_metrics.hpp"

#include "netbox/audit/decision.hpp"

#include <algorithm>

namespace netbox::dashboards {
namespace {

// Prometheus wants base units: the proxy keeps milliseconds, we publish seconds.
void seconds_histogram(Exposition& e, std::string_view name, std::string_view help, const proxy::HistogramSnapshot& h) {
  std::vector<double> bounds;
  bounds.reserve(h.bounds_ms.size());
  for (double ms : h.bounds_ms) bounds.push_back(ms / 1000.0);
  e.histogram(name, help, {}, bounds, h.counts, h.sum_ms / 1000.0);
}

// Every kind netbox knows from 0 (an alert on increase() needs the series before the first
// event), then any other kind counted.
void add_agent_events(Exposition& e, const std::vector<proxy::EventCount>& counted) {
  constexpr std::string_view kHelp =
      "Events an agent caused, by kind (exfiltration_attempt: a credential's placeholder sent to a host that is "
      "not the credential's).";
  const auto count_of = [&](std::string_view kind) -> std::uint64_t {
    for (const auto& ev : counted)
      if (ev.kind == kind) return ev.count;
    return 0;
  };
  for (const auto kind : proxy::kAgentEventKinds)
    e.counter("netbox_agent_events_total", kHelp, {{"event", std::string(kind)}}, static_cast<double>(count_of(kind)));
  for (const auto& ev : counted)
    if (std::ranges::find(proxy::kAgentEventKinds, std::string_view(ev.kind)) == std::end(proxy::kAgentEventKinds))
      e.counter("netbox_agent_events_total", kHelp, {{"event", ev.kind}}, static_cast<double>(ev.count));
}

// The guardian (issue 25): its rules acting, by action and the trigger's event; the kill
// or freeze it could not do; and its webhook's deliveries.
void add_guardian(Exposition& e, const proxy::CountersSnapshot& c) {
  constexpr std::string_view kActions =
      "Guardian rules that fired, by action (kill, freeze, report) and trigger event (denied, budget_exhausted, ...).";
  if (c.guardian_actions.empty())
    e.counter("netbox_guardian_actions_total", kActions, {{"action", "kill"}, {"trigger", "denied"}}, 0);
  for (const auto& a : c.guardian_actions)
    e.counter("netbox_guardian_actions_total", kActions, {{"action", a.action}, {"trigger", a.trigger}},
              static_cast<double>(a.count));
  e.counter("netbox_guardian_actions_failed_total",
            "Guardian freezes and kills that could not be done (no launcher attached, or it failed).", {},
            static_cast<double>(c.guardian_actions_failed));
  constexpr std::string_view kHook =
      "Guardian events and the webhook: sent (a 2xx answer), failed (an attempt, retried), dropped (the queue was full, "
      "or the URL is not sent).";
  e.counter("netbox_webhook_events_total", kHook, {{"result", "sent"}}, static_cast<double>(c.webhook_sent));
  e.counter("netbox_webhook_events_total", kHook, {{"result", "failed"}}, static_cast<double>(c.webhook_failed));
  e.counter("netbox_webhook_events_total", kHook, {{"result", "dropped"}}, static_cast<double>(c.webhook_dropped));
}

}  // namespace

std::string render_metrics(const proxy::CountersSnapshot& c, const audit::WriterStats& a) {
  Exposition e;
  constexpr std::string_view kRequests =
      "Requests and tunnels by how they ended (decision: allow, report, deny, cap, error), kind and agent.";
  if (c.requests.empty()) {
    for (const auto d : audit::kDecisions)
      e.counter("netbox_requests_total", kRequests, {{"agent", "anonymous"}, {"decision", std::string(d)}, {"kind", "http"}},
                0);
  }
  for (const auto& r : c.requests)
    e.counter("netbox_requests_total", kRequests, {{"agent", r.agent}, {"decision", r.decision}, {"kind", r.kind}},
              static_cast<double>(r.count));
  add_agent_events(e, c.agent_events);
  add_guardian(e, c);
  e.gauge("netbox_active_connections", "Agent connections open now.", {}, static_cast<double>(c.active_connections));
  e.gauge("netbox_active_tunnels", "CONNECT tunnels relaying now.", {}, static_cast<double>(c.active_tunnels));
  e.counter("netbox_bytes_total", "Bytes relayed, by direction (up: agent to upstream).", {{"direction", "up"}},
            static_cast<double>(c.bytes_up));
  e.counter("netbox_bytes_total", "Bytes relayed, by direction (up: agent to upstream).", {{"direction", "down"}},
            static_cast<double>(c.bytes_down));
  seconds_histogram(e, "netbox_dns_lookup_seconds", "Time to resolve a destination name.", c.dns_latency);
  seconds_histogram(e, "netbox_upstream_connect_seconds", "Time to connect to an upstream address.",
                    c.upstream_connect_latency);
  e.counter("netbox_upstream_errors_total", "DNS failures, refused or timed-out connects, bad upstream responses.", {},
            static_cast<double>(c.upstream_errors));
  constexpr std::string_view kCaps = "Connections refused by a connection cap, by limit.";
  e.counter("netbox_caps_hit_total", kCaps, {{"limit", "max_connections"}}, static_cast<double>(c.caps_hit_global));
  e.counter("netbox_caps_hit_total", kCaps, {{"limit", "max_connections_per_agent"}},
            static_cast<double>(c.caps_hit_agent));
  e.counter("netbox_caps_hit_total", kCaps, {{"limit", "max_connections_per_host"}},
            static_cast<double>(c.caps_hit_host));
  e.counter("netbox_client_connections_refused_total",
            "Agent connections closed at accept: over the per-agent or total connection limit.", {},
            static_cast<double>(c.client_connections_refused));
  e.counter("netbox_foreign_source_connections_refused_total",
            "Connections on an agent's own listeners from an address not registered for that agent, closed.", {},
            static_cast<double>(c.foreign_sources_refused));
  e.counter("netbox_accept_errors_total", "Failed accepts (out of descriptors); accepting pauses 100 ms after each.",
            {}, static_cast<double>(c.accept_errors));
  e.gauge("netbox_attached_agents", "Agents registered with the proxy now (launched, or registered by address).", {},
          static_cast<double>(c.attached_agents));
  // Every series from 0, so an alert on a failure's increase has one before the first.
  constexpr std::string_view kTls =
      "TLS inspection handshakes by side (agent: with netbox's leaf certificate; upstream: netbox with the "
      "upstream) and result.";
  constexpr std::string_view kAgentTls[] = {"ok", "failed"};
  constexpr std::string_view kUpstreamTls[] = {"ok", "certificate_refused", "timeout", "failed"};
  for (std::size_t i = 0; i < std::size(kAgentTls); ++i)
    e.counter("netbox_tls_handshakes_total", kTls, {{"side", "agent"}, {"result", std::string(kAgentTls[i])}},
              static_cast<double>(c.tls_agent[i]));
  for (std::size_t i = 0; i < std::size(kUpstreamTls); ++i)
    e.counter("netbox_tls_handshakes_total", kTls, {{"side", "upstream"}, {"result", std::string(kUpstreamTls[i])}},
              static_cast<double>(c.tls_upstream[i]));
  constexpr std::string_view kReloads = "Policy reloads, by result.";
  e.counter("netbox_policy_reloads_total", kReloads, {{"result", "ok"}}, static_cast<double>(c.policy_reloads_ok));
  e.counter("netbox_policy_reloads_total", kReloads, {{"result", "failed"}},
            static_cast<double>(c.policy_reloads_failed));
  e.gauge("netbox_audit_queue_depth", "Audit records waiting for the writer thread.", {},
          static_cast<double>(a.queue_depth));
  e.counter("netbox_audit_rows_written_total", "Request rows committed to the audit store.", {},
            static_cast<double>(a.rows_written));
  e.counter("netbox_audit_write_errors_total", "Failed audit store writes (retried, never dropped).", {},
            static_cast<double>(a.write_errors));
  e.counter("netbox_audit_rejected_total",
            "Audit records refused because the queue was full or the store unhealthy (the connection was refused too).",
            {}, static_cast<double>(a.rejected));
  // A PostgreSQL store's local spool (docs/audit.md, "When the server is away"); 0 without one.
  e.gauge("netbox_audit_spool_rows", "Request rows in the local audit spool, not yet shipped to the server.", {},
          static_cast<double>(a.spool_rows));
  e.gauge("netbox_audit_spool_bytes", "Bytes the local audit spool's items take (bounded by --audit-spool-size).", {},
          static_cast<double>(a.spool_bytes));
  e.counter("netbox_audit_spool_shipped_total", "Request rows shipped from the local audit spool to the server.", {},
            static_cast<double>(a.spool_shipped));
  e.gauge("netbox_audit_healthy", "1 while the audit store can write; 0 while new connections are refused.", {},
          a.healthy ? 1 : 0);
  e.gauge("netbox_build_info", "Always 1; the labels say which netbox this is.",
          {{"version", NETBOX_VERSION}, {"commit", NETBOX_COMMIT}}, 1);
  e.gauge("netbox_policy_info", "Always 1; the digest label is the SHA-256 of the policy in force.",
          {{"digest", c.policy_digest}}, 1);
  e.gauge("netbox_policy_loaded_timestamp_seconds", "When the policy in force was loaded (start or last good reload).",
          {}, c.policy_loaded_at);
  for (const auto& x : c.exports) {
    e.counter("netbox_export_records_total", "OCSF records written or accepted by an --export sink, by sink.",
              {{"sink", x.sink}}, static_cast<double>(x.exported));
    e.counter("netbox_export_dropped_total",
              "OCSF records an --export sink lost (queue or buffer full, receiver failing, write failed), by sink.",
              {{"sink", x.sink}}, static_cast<double>(x.dropped));
  }
  add_process_metrics(e);
  return e.text();
}

LiveStats live_stats(const proxy::CountersSnapshot& c) {
  LiveStats s;
  for (const auto& r : c.requests) {
    if (r.decision == "allow") s.allow += r.count;
    else if (r.decision == "deny") s.deny += r.count;
    else if (r.decision == "report") s.report += r.count;
    else if (r.decision == "cap") s.cap += r.count;
    else if (r.decision == "error") s.error += r.count;
  }
  s.active_connections = c.active_connections;
  s.active_tunnels = c.active_tunnels;
  s.bytes_up = c.bytes_up;
  s.bytes_down = c.bytes_down;
  return s;
}

}  // namespace netbox::dashboards
