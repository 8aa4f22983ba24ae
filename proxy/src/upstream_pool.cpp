#include "upstream_pool.hpp"

#include <sys/socket.h>

namespace netbox::proxy {

std::string UpstreamPool::key(const boost::asio::ip::tcp::endpoint& ep, const std::string& host) {
  return ep.address().to_string() + "|" + std::to_string(ep.port()) + "|" + host;
}

namespace {
// A peek that would block means "still open and quiet", the only state worth reusing.
bool still_usable(boost::asio::ip::tcp::socket& s) {
  char c;
  const auto n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

std::optional<boost::asio::ip::tcp::socket> UpstreamPool::take(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return std::nullopt;
  auto& v = it->second;
  const auto now = std::chrono::steady_clock::now();
  while (!v.empty()) {
    Idle idle = std::move(v.back());
    v.pop_back();
    if (now - idle.since < kMaxIdle && still_usable(idle.socket)) {
      if (v.empty()) idle_.erase(it);
      return std::move(idle.socket);
    }
  }
  idle_.erase(it);
  return std::nullopt;
}

void UpstreamPool::put(const std::string& key, boost::asio::ip::tcp::socket socket) {
  auto& v = idle_[key];
  const auto now = std::chrono::steady_clock::now();
  // take() reuses the newest first, so the oldest sit at the front: past kMaxIdle they
  // would never be taken, only keep an fd each. Closed here, a few at a time.
  std::size_t stale = 0;
  while (stale < v.size() && stale < 8 && now - v[stale].since >= kMaxIdle) ++stale;
  if (stale) v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(stale));
  if (v.size() >= kMaxIdlePerKey) return;  // closes the socket
  v.push_back(Idle{std::move(socket), now});
}

std::size_t UpstreamPool::idle_count() const {
  std::size_t n = 0;
  for (const auto& [k, v] : idle_) n += v.size();
  return n;
}

}  // namespace netbox::proxy
