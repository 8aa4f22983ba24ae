#include "pipeline/caps.hpp"

namespace netbox::proxy {

std::string_view rule_of(CapKind k) {
  switch (k) {
    case CapKind::none: return {};
    case CapKind::global: return "limits.max_connections";
    case CapKind::per_agent: return "limits.max_connections_per_agent";
    case CapKind::per_host:
    case CapKind::per_address: return "limits.max_connections_per_host";
  }
  return {};
}

CapToken& CapToken::operator=(CapToken&& o) noexcept {
  if (this != &o) {
    release();
    caps_ = o.caps_;
    agent_ = std::move(o.agent_);
    host_ = std::move(o.host_);
    address_ = std::move(o.address_);
    o.caps_ = nullptr;
  }
  return *this;
}

void CapToken::release() {
  if (caps_) caps_->release(agent_, host_, address_);
  caps_ = nullptr;
}

CapResult Caps::acquire(const std::string& agent, const std::string& host, const std::string& address,
                        const policy::Limits& global, const policy::Limits& mine) {
  CapResult r;
  std::lock_guard lock(mu_);
  auto& a = per_agent_[agent];
  auto& h = per_host_[host];
  auto& ad = per_address_[address];
  if (total_ >= global.max_connections) {
    r.kind = CapKind::global;
    r.limit = global.max_connections;
    r.reason = "the proxy already has " + std::to_string(total_) + " open connections (limits.max_connections = " +
               std::to_string(global.max_connections) + ")";
  } else if (a >= mine.max_connections_per_agent) {
    r.kind = CapKind::per_agent;
    r.limit = mine.max_connections_per_agent;
    r.reason = "agent " + agent + " already has " + std::to_string(a) +
               " open connections (limits.max_connections_per_agent = " +
               std::to_string(mine.max_connections_per_agent) + ")";
  } else if (h >= mine.max_connections_per_host) {
    r.kind = CapKind::per_host;
    r.limit = mine.max_connections_per_host;
    r.reason = "there are already " + std::to_string(h) + " open connections to " + host +
               " (limits.max_connections_per_host = " + std::to_string(mine.max_connections_per_host) + ")";
  } else if (ad >= mine.max_connections_per_host) {
    r.kind = CapKind::per_address;
    r.limit = mine.max_connections_per_host;
    r.reason = "there are already " + std::to_string(ad) + " open connections to " + host + "'s address " + address +
               ", under whatever names (limits.max_connections_per_host = " +
               std::to_string(mine.max_connections_per_host) + ")";
  }
  if (r.kind != CapKind::none) {
    if (a == 0) per_agent_.erase(agent);
    if (h == 0) per_host_.erase(host);
    if (ad == 0) per_address_.erase(address);
    return r;
  }
  ++total_;
  ++a;
  ++h;
  ++ad;
  r.token = CapToken(this, agent, host, address);
  return r;
}

void Caps::release(const std::string& agent, const std::string& host, const std::string& address) {
  std::lock_guard lock(mu_);
  --total_;
  if (auto it = per_agent_.find(agent); it != per_agent_.end() && --it->second == 0) per_agent_.erase(it);
  if (auto it = per_host_.find(host); it != per_host_.end() && --it->second == 0) per_host_.erase(it);
  if (auto it = per_address_.find(address); it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

std::size_t Caps::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace netbox::proxy
