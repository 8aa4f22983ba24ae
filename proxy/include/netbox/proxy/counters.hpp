#pragma once
// A point-in-time copy of the proxy's counters, for the dashboards' /metrics and JSON API.
#include "netbox/export/exporter.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

struct HistogramSnapshot {
  std::vector<double> bounds_ms;      // upper bounds of the finite buckets, ascending
  std::vector<std::uint64_t> counts;  // per bucket (not cumulative); one more than bounds: +Inf last
  double sum_ms = 0;
  std::uint64_t count = 0;
};

// The most distinct `agent` label values netbox_requests_total gets; requests of further
// ones are counted as "other", so the series stay bounded whatever registers.
inline constexpr std::size_t kMaxAgentLabels = 256;

struct RequestCount {
  std::string agent;
  std::string kind;      // "http" or "connect"
  std::string decision;  // "allow", "deny", "report"
  std::uint64_t count = 0;
};

struct EventCount {
  std::string kind;  // exfiltration_attempt, ...
  std::uint64_t count = 0;
};

// The events an agent can cause: /metrics publishes each from 0, so that an alert on its
// increase has a series before the first one happens.
inline constexpr std::string_view kAgentEventKinds[] = {"exfiltration_attempt"};

struct GuardianActionCount {
  std::string action;   // kill, freeze, report
  std::string trigger;  // the trigger's event: denied, budget_exhausted, ...
  std::uint64_t count = 0;
};

struct CountersSnapshot {
  std::vector<RequestCount> requests;
  std::vector<EventCount> agent_events;  // the kinds counted so far
  std::uint64_t active_connections = 0;  // agent connections open now
  std::uint64_t active_tunnels = 0;      // CONNECT tunnels relaying now
  std::uint64_t bytes_up = 0;            // agent -> upstream, bodies and tunnel bytes
  std::uint64_t bytes_down = 0;          // upstream -> agent
  HistogramSnapshot dns_latency;
  HistogramSnapshot upstream_connect_latency;
  std::uint64_t policy_reloads_ok = 0;
  std::uint64_t policy_reloads_failed = 0;
  std::uint64_t caps_hit_global = 0;     // limits.max_connections
  std::uint64_t caps_hit_agent = 0;      // limits.max_connections_per_agent
  std::uint64_t caps_hit_host = 0;       // limits.max_connections_per_host
  std::uint64_t upstream_errors = 0;     // DNS failures, refused, timeouts, bad responses
  std::uint64_t client_connections_refused = 0;  // agent connections over the connection caps
  std::uint64_t accept_errors = 0;       // accept failed (out of descriptors): accepting paused
  std::uint64_t foreign_sources_refused = 0;  // on an agent's own listener, from none of its addresses
  std::uint64_t attached_agents = 0;     // agents registered now (launched or by address)
  // TLS inspection handshakes, by side and result (kTlsResults' order): the agent's with
  // netbox's leaf certificate, and netbox's with the upstream.
  std::uint64_t tls_agent[2] = {};       // ok, failed
  std::uint64_t tls_upstream[4] = {};    // ok, certificate_refused, timeout, failed
  std::vector<GuardianActionCount> guardian_actions;  // the guardian's rules acting (issue 25)
  std::uint64_t guardian_actions_failed = 0;  // a freeze or kill that could not be done
  std::uint64_t webhook_sent = 0;     // events the webhook took (2xx)
  std::uint64_t webhook_failed = 0;   // attempts that failed (retried)
  std::uint64_t webhook_dropped = 0;  // events dropped: its queue was full
  std::size_t audit_queue_depth = 0;     // from the audit writer
  bool audit_healthy = true;
  std::string policy_digest;      // SHA-256 of the policy in force
  double policy_loaded_at = 0;    // when it was loaded, seconds since the Unix epoch
  std::vector<siem::SinkStats> exports;  // per --export sink: records exported and dropped
};

}  // namespace netbox::proxy
