#include "base/counters.hpp"

namespace netbox::proxy {

void LatencyHistogram::observe(std::chrono::steady_clock::duration d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  const double ms = static_cast<double>(us) / 1000.0;
  std::size_t i = 0;
  while (i < kBoundsMs.size() && ms > kBoundsMs[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<std::uint64_t>(us < 0 ? 0 : us), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

HistogramSnapshot LatencyHistogram::snapshot() const {
  HistogramSnapshot s;
  s.bounds_ms.assign(kBoundsMs.begin(), kBoundsMs.end());
  for (const auto& b : buckets_) s.counts.push_back(b.load(std::memory_order_relaxed));
  s.sum_ms = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1000.0;
  s.count = count_.load(std::memory_order_relaxed);
  return s;
}

void Counters::count_request(const std::string& agent, const std::string& kind, std::string_view decision) {
  const std::tuple<std::string_view, std::string_view, std::string_view> key{agent, kind, decision};
  std::lock_guard lock(mu_);
  if (auto it = requests_.find(key); it != requests_.end()) {
    ++it->second;
    return;
  }
  std::string label = agent;
  if (!agent_labels_.contains(agent)) {
    if (agent_labels_.size() >= kMaxAgentLabels) label = "other";
    else agent_labels_.insert(agent);
  }
  ++requests_[std::tuple<std::string, std::string, std::string>{label, kind, std::string(decision)}];
}

void Counters::count_agent_event(std::string_view kind) {
  std::lock_guard lock(mu_);
  auto it = agent_events_.find(kind);
  if (it == agent_events_.end()) it = agent_events_.emplace(std::string(kind), 0).first;
  ++it->second;
}

void Counters::count_guardian_action(std::string_view action, std::string_view trigger) {
  std::lock_guard lock(mu_);
  ++guardian_actions_[{std::string(action), std::string(trigger)}];
}

CountersSnapshot Counters::snapshot() const {
  CountersSnapshot s;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, n] : requests_)
      s.requests.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
    for (const auto& [kind, n] : agent_events_) s.agent_events.push_back({kind, n});
    for (const auto& [key, n] : guardian_actions_) s.guardian_actions.push_back({key.first, key.second, n});
  }
  s.active_connections = active_connections.load();
  s.active_tunnels = active_tunnels.load();
  s.bytes_up = bytes_up.load();
  s.bytes_down = bytes_down.load();
  s.dns_latency = dns_latency.snapshot();
  s.upstream_connect_latency = connect_latency.snapshot();
  s.policy_reloads_ok = policy_reloads_ok.load();
  s.policy_reloads_failed = policy_reloads_failed.load();
  s.caps_hit_global = caps_hit_global.load();
  s.caps_hit_agent = caps_hit_agent.load();
  s.caps_hit_host = caps_hit_host.load();
  s.upstream_errors = upstream_errors.load();
  s.client_connections_refused = client_connections_refused.load();
  s.accept_errors = accept_errors.load();
  s.foreign_sources_refused = foreign_sources_refused.load();
  for (std::size_t i = 0; i < tls_agent_.size(); ++i) s.tls_agent[i] = tls_agent_[i].load();
  for (std::size_t i = 0; i < tls_upstream_.size(); ++i) s.tls_upstream[i] = tls_upstream_[i].load();
  s.guardian_actions_failed = guardian_actions_failed.load();
  s.webhook_sent = webhook_sent.load();
  s.webhook_failed = webhook_failed.load();
  s.webhook_dropped = webhook_dropped.load();
  return s;
}

}  // namespace netbox::proxy
