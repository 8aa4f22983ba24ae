#include "upstream/upstream_pool.hpp"

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

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

void UpstreamPool::tls_key(std::string& k, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                           std::string_view host, const void* trust) {
  key(k, scope, ep, host);
  // Host names hold no NUL, so this tail sets every TLS key apart from every plain one.
  k += '\0';
  const auto id = reinterpret_cast<std::uintptr_t>(trust);
  k.append(reinterpret_cast<const char*>(&id), sizeof id);
}

namespace {
// A peek that would block means "still open and quiet", the only state worth reusing.
bool still_usable(boost::asio::ip::tcp::socket& s) {
  char c;
  const auto n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Bytes the upstream sent while the connection was idle (more than it was asked for, a
// close_notify, an alert) may already sit in OpenSSL's records or its read BIO rather
// than the socket: any of them and the connection is not reused, since they would be
// read as the answer to the next request.
bool still_usable(UpstreamPool::TlsStream& s) {
  SSL* ssl = s.native_handle();
  if (SSL_get_shutdown(ssl) != 0 || SSL_has_pending(ssl) || BIO_ctrl_pending(SSL_get_rbio(ssl)) != 0) return false;
  return still_usable(s.next_layer().socket());
}

bool still_usable(UpstreamPool::Connection& c) {
  if (auto* s = std::get_if<boost::asio::ip::tcp::socket>(&c)) return still_usable(*s);
  if (auto* t = std::get_if<std::unique_ptr<UpstreamPool::TlsStream>>(&c)) return *t && still_usable(**t);
  return false;
}
}  // namespace

UpstreamPool::UpstreamPool(Bounds bounds) : bounds_(bounds) {
  if (bounds_.total == 0) bounds_.total = 1;
  if (bounds_.per_agent == 0) bounds_.per_agent = 1;
}

template <UpstreamPool::Link UpstreamPool::Node::*L>
void UpstreamPool::push_newest(List& list, Node* n) {
  (n->*L).newer = nullptr;
  (n->*L).older = list.newest;
  if (list.newest) (list.newest->*L).newer = n;
  list.newest = n;
  if (!list.oldest) list.oldest = n;
  ++list.size;
}

template <UpstreamPool::Link UpstreamPool::Node::*L>
void UpstreamPool::unlink(List& list, Node* n) {
  auto& link = n->*L;
  (link.newer ? (link.newer->*L).older : list.newest) = link.older;
  (link.older ? (link.older->*L).newer : list.oldest) = link.newer;
  link = {};
  --list.size;
}

void UpstreamPool::close(Node* n) {
  unlink<&Node::by_key>(n->key->idle, n);
  unlink<&Node::by_agent>(n->key->agent->idle, n);
  unlink<&Node::by_age>(all_, n);
  n->conn = std::monostate{};  // closes the descriptor (a TLS one without close_notify)
  n->key = nullptr;
  n->next_free = free_;
  free_ = n;
}

// An emptied entry stays in the map: the connection taken here usually comes back to the
// same key after its response, and a kept entry spares the map node, the key's copy and
// the list head each time (the key, with the agent in it, is past the small-string size).
// put() sweeps empty entries out once there are many.
UpstreamPool::Connection UpstreamPool::take_any(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return {};
  auto& idle = it->second.idle;
  const auto now = std::chrono::steady_clock::now();
  while (Node* n = idle.newest) {
    const bool fresh = now - n->since < kMaxIdle;
    Connection c = std::move(n->conn);
    close(n);  // the moved-from connection holds no descriptor
    if (fresh && still_usable(c)) return c;
  }
  return {};
}

std::optional<boost::asio::ip::tcp::socket> UpstreamPool::take(const std::string& key) {
  auto c = take_any(key);
  if (auto* s = std::get_if<boost::asio::ip::tcp::socket>(&c)) return std::optional(std::move(*s));
  return std::nullopt;
}

std::unique_ptr<UpstreamPool::TlsStream> UpstreamPool::take_tls(const std::string& key) {
  auto c = take_any(key);
  if (auto* t = std::get_if<std::unique_ptr<TlsStream>>(&c)) return std::move(*t);
  return nullptr;
}

void UpstreamPool::sweep_keys() {
  std::erase_if(keys_, [](auto& entry) {
    if (entry.second.idle.size) return false;
    --entry.second.agent->keys;
    return true;
  });
  std::erase_if(agents_, [](const auto& entry) { return entry.second.keys == 0; });
}

namespace {
// The scope at the head of a key (see scope()): the agent, a NUL, a family tag and the
// client address's bytes.
std::string_view scope_of(std::string_view key) {
  const auto nul = key.find('\0');
  if (nul == std::string_view::npos || nul + 1 >= key.size()) return key;
  return key.substr(0, std::min(key.size(), nul + 2 + (key[nul + 1] == '4' ? 4 : 16)));
}
}  // namespace

void UpstreamPool::put(const std::string& key, boost::asio::ip::tcp::socket socket) { put_any(key, std::move(socket)); }

void UpstreamPool::put(const std::string& key, std::unique_ptr<TlsStream> stream) {
  if (stream) put_any(key, std::move(stream));
}

void UpstreamPool::put_any(const std::string& key, Connection conn) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= kMaxKeys) sweep_keys();
    Agent& agent = agents_.try_emplace(std::string(scope_of(key))).first->second;
    ++agent.keys;
    it = keys_.try_emplace(key, Key{{}, &agent}).first;
  }
  Key& k = it->second;
  const auto now = std::chrono::steady_clock::now();
  // take() reuses the newest first, so connections past kMaxIdle sit at the old end, to be
  // taken never, only to keep a descriptor each. Closed here, a few at a time.
  for (int i = 0; i < 8 && all_.oldest && now - all_.oldest->since >= kMaxIdle; ++i) close(all_.oldest);
  if (k.idle.size >= kMaxIdlePerKey) close(k.idle.oldest);
  if (k.agent->idle.size >= bounds_.per_agent) close(k.agent->idle.oldest);
  if (all_.size >= bounds_.total) close(all_.oldest);
  Node* n = free_;
  if (n) {
    free_ = n->next_free;
  } else {
    n = &nodes_.emplace_back();
  }
  n->conn = std::move(conn);
  n->since = now;
  n->key = &k;
  push_newest<&Node::by_key>(k.idle, n);
  push_newest<&Node::by_agent>(k.agent->idle, n);
  push_newest<&Node::by_age>(all_, n);
}

bool UpstreamPool::close_oldest() {
  if (!all_.oldest) return false;
  close(all_.oldest);
  return true;
}

}  // namespace netbox::proxy
