// DoorServices: what the doors and sessions use of the running proxy (door_services.hpp).
#include "base/door_services.hpp"

#include "base/fd_limit.hpp"
#include "inspect/inspector.hpp"

#include <algorithm>
#include <chrono>

namespace netbox::proxy {

namespace {

std::unique_ptr<ClientSlots> client_slots_for(const ProxyOptions& o, std::size_t fd_limit) {
  const std::size_t total = o.max_client_connections
                                ? o.max_client_connections
                                : derived_client_connection_limit(fd_limit, ProxyOptions::kFdReserve);
  const std::size_t per_agent =
      o.max_client_connections_per_agent ? o.max_client_connections_per_agent
                                         : std::min<std::size_t>(512, std::max<std::size_t>(1, total / 4));
  return std::make_unique<ClientSlots>(total, per_agent);
}

}  // namespace

bool RateLimitedLog::note() {
  ++pending_;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_ns_.load();
  if (now - last < std::chrono::nanoseconds(std::chrono::seconds(1)).count()) return false;
  return last_ns_.compare_exchange_strong(last, now);
}

DoorServices::DoorServices(ProxyOptions opts)
    : options(std::move(opts)), log(options.log_format, options.log_fd), fd_limit(raise_fd_limit()),
      client_slots(client_slots_for(options, fd_limit)),
      dial_fd_ceiling(proxy::dial_fd_ceiling(fd_limit, ProxyOptions::kFdReserve)),
      idle_pool(idle_pool_limits(fd_limit)) {}

DoorServices::~DoorServices() = default;

void DoorServices::event(std::string kind, std::string message, std::string detail) {
  audit::Event e;
  e.ts = audit::Clock::now();
  e.kind = std::move(kind);
  e.message = std::move(message);
  e.detail = std::move(detail);
  writer->event(std::move(e));
}


void DoorServices::agent_event(std::string kind, const std::string& agent, std::string particulars,
                               std::string message, std::string detail, LogFields fields) {
  counters.count_agent_event(kind);
  if (kind == log_event::exfiltration_attempt)  // a guardian trigger (issue 25)
    if (auto guard = guardians.find(agent)) guard->note(policy::GuardianEvent::exfiltration_attempt, particulars);
  const auto held_back = agent_log_limit.admit(agent, kind + '\0' + particulars, std::chrono::steady_clock::now());
  if (held_back) {
    std::vector<LogField> line(fields.begin(), fields.end());
    if (*held_back > 0) line.emplace_back(log_key::held_back, *held_back);
    log.write(LogLevel::warn, kind, line);  // what an agent did wrong: a warning, as a refusal
  }
  audit::Event e;
  e.ts = audit::Clock::now();
  e.kind = std::move(kind);
  e.agent = agent;
  e.fold_key = std::move(particulars);
  e.message = std::move(message);
  e.detail = std::move(detail);
  if (options.exporter) options.exporter->event(e);
  writer->event(std::move(e));
}


std::string DoorServices::metric_label(const AgentIdentity& who) const {
  switch (options.metrics_agent_label) {
    case MetricsAgentLabel::none: return "all";
    case MetricsAgentLabel::name: return who.agent;
    case MetricsAgentLabel::profile: break;
  }
  // Unregistered clients stay "anonymous"; a registered agent without a profile of its
  // own is decided by the top level, "default".
  if (who.agent == "anonymous") return who.agent;
  return who.profile.empty() ? "default" : who.profile;
}


std::shared_ptr<DnsView> DoorServices::dns_view_of(const boost::asio::ip::address& agent) const {
  std::lock_guard lock(dns_mu);
  auto it = dns_views.find(canonical_address(agent));
  return it == dns_views.end() ? nullptr : it->second;
}

}  // namespace netbox::proxy
