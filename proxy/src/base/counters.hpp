#pragma once
// The live counters behind CountersSnapshot: atomics on the hot path, one small
// mutex only for the per-agent request map.
#include "netbox/proxy/counters.hpp"

#include <array>
#include <atomic>
#include <functional>
#include <chrono>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace netbox::proxy {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 13> kBoundsMs{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
  void observe(std::chrono::steady_clock::duration d);
  HistogramSnapshot snapshot() const;

 private:
  std::array<std::atomic<std::uint64_t>, kBoundsMs.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_us_{0};
  std::atomic<std::uint64_t> count_{0};
};

class Counters {
 public:
  // `agent` is the metric label (see MetricsAgentLabel), not necessarily the name; past
  // kMaxAgentLabels distinct values it is counted as "other".
  void count_request(const std::string& agent, const std::string& kind, std::string_view decision);
  // An event an agent caused (exfiltration_attempt, ...): `kind` is one of netbox's own
  // event names, never the agent's text, so the label set stays bounded.
  void count_agent_event(std::string_view kind);
  // A guardian rule acted (netbox_guardian_actions_total): `action` and `trigger` (the
  // trigger's event name) are netbox's own words, so the label set stays bounded.
  void count_guardian_action(std::string_view action, std::string_view trigger);

  std::atomic<std::uint64_t> active_connections{0};
  std::atomic<std::uint64_t> active_tunnels{0};
  std::atomic<std::uint64_t> active_exchanges{0};  // requests and tunnels in flight (for graceful stop)
  std::atomic<std::uint64_t> bytes_up{0};
  std::atomic<std::uint64_t> bytes_down{0};
  std::atomic<std::uint64_t> policy_reloads_ok{0};
  std::atomic<std::uint64_t> policy_reloads_failed{0};
  std::atomic<std::uint64_t> caps_hit_global{0};
  std::atomic<std::uint64_t> caps_hit_agent{0};
  std::atomic<std::uint64_t> caps_hit_host{0};
  std::atomic<std::uint64_t> upstream_errors{0};
  std::atomic<std::uint64_t> client_connections_refused{0};
  std::atomic<std::uint64_t> accept_errors{0};
  std::atomic<std::uint64_t> foreign_sources_refused{0};
  // TLS inspection handshakes (CountersSnapshot::tls_agent, tls_upstream).
  enum class AgentTls { ok, failed };
  enum class UpstreamTls { ok, certificate_refused, timeout, failed };
  void count_tls(AgentTls r) { ++tls_agent_[static_cast<int>(r)]; }
  void count_tls(UpstreamTls r) { ++tls_upstream_[static_cast<int>(r)]; }
  std::atomic<std::uint64_t> guardian_actions_failed{0};
  std::atomic<std::uint64_t> webhook_sent{0};
  std::atomic<std::uint64_t> webhook_failed{0};   // attempts that failed (each retried)
  std::atomic<std::uint64_t> webhook_dropped{0};  // events dropped: the queue was full
  LatencyHistogram dns_latency;
  LatencyHistogram connect_latency;

  CountersSnapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  // Transparent comparison: a request is counted by looking up views of its strings; the
  // key is only copied the first time an (agent, kind, decision) appears.
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t, std::less<>> requests_;
  std::set<std::string, std::less<>> agent_labels_;
  std::map<std::string, std::uint64_t, std::less<>> agent_events_;
  std::array<std::atomic<std::uint64_t>, 2> tls_agent_{};
  std::array<std::atomic<std::uint64_t>, 4> tls_upstream_{};
  std::map<std::pair<std::string, std::string>, std::uint64_t> guardian_actions_;
};

}  // namespace netbox::proxy
