#include "upstream_pool.hpp"

#include <sys/socket.h>

namespace netbox::proxy {

namespace {
void append_address(std::string& k, const boost::asio::ip::address& a) {
  k += a.is_v4() ? '4' : '6';
  if (a.is_v4()) {
    const auto b = a.to_v4().to_bytes();
    k.append(reinterpret_cast<const char*>(b.data()), b.size());
  } else {
    const auto b = a.to_v6().to_bytes();
    k.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
}
}  // namespace

// Raw bytes, not text: this runs for every forwarded request, and inet_ntop per request
// showed in the profile. The scope ends in an address (its family tag fixes its length),
// as does the dialled endpoint (then 2 bytes of port), and agent names hold no NUL: no
// two scope/endpoint/host triples share a key.
std::string UpstreamPool::scope(std::string_view agent, const boost::asio::ip::address& client) {
  std::string s(agent);
  s += '\0';
  append_address(s, client);
  return s;
}

void UpstreamPool::key(std::string& k, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                       std::string_view host) {
  k.assign(scope);
  append_address(k, ep.address());
  k += static_cast<char>(ep.port() >> 8);
  k += static_cast<char>(ep.port() & 0xff);
  k += host;
}

namespace {
// A peek that would block means "still open and quiet", the only state worth reusing.
bool still_usable(boost::asio::ip::tcp::socket& s) {
  char c;
  const auto n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

// An emptied entry stays in the map: the connection taken here usually comes back to the
// same key after its response, and a kept entry spares the map node, the key's copy and
// the vector's storage each time (the key, with the agent in it, is past the small-string
// size). put() sweeps empty entries out once there are many.
std::optional<boost::asio::ip::tcp::socket> UpstreamPool::take(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return std::nullopt;
  auto& v = it->second;
  const auto now = std::chrono::steady_clock::now();
  while (!v.empty()) {
    Idle idle = std::move(v.back());
    v.pop_back();
    if (now - idle.since < kMaxIdle && still_usable(idle.socket)) return std::move(idle.socket);
  }
  return std::nullopt;
}

void UpstreamPool::put(const std::string& key, boost::asio::ip::tcp::socket socket) {
  auto it = idle_.find(key);
  if (it == idle_.end()) {
    if (idle_.size() >= kMaxKeys) std::erase_if(idle_, [](const auto& entry) { return entry.second.empty(); });
    it = idle_.try_emplace(key).first;
  }
  auto& v = it->second;
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
