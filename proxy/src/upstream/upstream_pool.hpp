#pragma once
// Idle keep-alive connections to upstreams, per io thread (so no locking), keyed by the
// agent they served (its name and address), the exact address dialled and the host name
// the request named: a connection is only ever reused for the same agent, the same
// checked address and the same Host. Whatever one agent left on a connection (a body the
// upstream read as a request of its own, an answer still to come) can then never reach
// another agent.
//
// Every idle connection is a descriptor, so the pool is bounded in total and per agent
// (its scope: name and address), both part of the proxy's descriptor budget (fd_limit.hpp).
// Over a bound, the oldest idle connection goes (of the key, of the agent, or of all), never
// the one being put: an agent that fans out over many upstreams recycles its own idle
// connections instead of holding descriptors every other agent needs.
//
// The pool holds plain TCP connections (forwarded HTTP) and verified TLS connections
// (inspected HTTPS, upstream_link.hpp) under the same bounds, since both cost a descriptor.
// A TLS key adds the trust configuration the certificate was verified against to the
// host it was verified for (its SNI too), so a TLS connection is only ever reused for the
// same name, address, port and trust store; no plain key equals a TLS key.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <memory>

namespace netbox::proxy {

class UpstreamPool {
 public:
  using TlsStream = boost::asio::ssl::stream<boost::beast::tcp_stream>;  // timed like a plain connection
  using Connection = std::variant<std::monostate, boost::asio::ip::tcp::socket, std::unique_ptr<TlsStream>>;

  // As many as one io thread has requests in flight to one upstream under load: a pool
  // smaller than that closes connections after their response and dials new ones for the
  // next requests (with 16, B1 at 500 agent connections dialled for 58 % of requests).
  static constexpr std::size_t kMaxIdlePerKey = 256;
  static constexpr std::chrono::seconds kMaxIdle{30};
  // Keys kept (with or without idle connections) before put() sweeps out the empty ones.
  static constexpr std::size_t kMaxKeys = 1024;

  struct Bounds {
    std::size_t total = static_cast<std::size_t>(-1);      // idle connections in this pool
    std::size_t per_agent = static_cast<std::size_t>(-1);  // of those, for one scope
  };

  explicit UpstreamPool(Bounds bounds);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // The identity part of a key, once per agent connection.
  static std::string scope(std::string_view agent, const boost::asio::ip::address& client);
  // Writes the key into `out` (whose capacity is reused from one request to the next).
  static void key(std::string& out, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                  std::string_view host);
  // The key of a TLS connection: key() plus the trust store it was verified against
  // (`trust`: the client context's identity, stable for the proxy's life).
  static void tls_key(std::string& out, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                      std::string_view host, const void* trust);
  // An idle connection that the upstream has not closed meanwhile, if any.
  std::optional<boost::asio::ip::tcp::socket> take(const std::string& key);
  void put(const std::string& key, boost::asio::ip::tcp::socket socket);
  // The same for TLS: taken only with nothing the upstream sent since buffered at any
  // layer (socket, OpenSSL's records); put only after a complete answer that leaves
  // nothing unread (the caller's check: its own read buffer is empty).
  std::unique_ptr<TlsStream> take_tls(const std::string& key);
  void put(const std::string& key, std::unique_ptr<TlsStream> stream);
  // Closes the oldest idle connection, to free a descriptor for a dial; false if none is idle.
  bool close_oldest();
  std::size_t idle_count() const { return all_.size; }
  const Bounds& bounds() const { return bounds_; }

 private:
  struct Node;
  struct Link {
    Node* newer = nullptr;
    Node* older = nullptr;
  };
  // An intrusive list, newest first: taking and putting a connection neither allocates
  // nor searches, on the keep-alive fast path or when a bound evicts the oldest.
  struct List {
    Node* newest = nullptr;
    Node* oldest = nullptr;
    std::size_t size = 0;
  };
  struct Agent {
    List idle;
    std::size_t keys = 0;  // Key entries pointing here
  };
  struct Key {
    List idle;
    Agent* agent = nullptr;
  };
  struct Node {
    Connection conn;
    std::chrono::steady_clock::time_point since;
    Key* key = nullptr;
    Link by_key, by_agent, by_age;
    Node* next_free = nullptr;
  };

  template <Link Node::*L>
  static void push_newest(List& list, Node* n);
  template <Link Node::*L>
  static void unlink(List& list, Node* n);
  void close(Node* n);  // unlinks from every list, closes the socket, recycles the node
  Connection take_any(const std::string& key);
  void put_any(const std::string& key, Connection conn);
  void sweep_keys();

  Bounds bounds_;
  std::unordered_map<std::string, Key> keys_;    // node-based: Key and Agent addresses are stable
  std::unordered_map<std::string, Agent> agents_;
  List all_;
  std::deque<Node> nodes_;  // stable addresses; recycled through free_, so at most bounds_.total
  Node* free_ = nullptr;
};

}  // namespace netbox::proxy
