#pragma once
// Idle keep-alive connections to upstreams, per io thread (so no locking), keyed by the
// agent they served (its name and address), the exact address dialled and the host name
// the request named: a connection is only ever reused for the same agent, the same
// checked address and the same Host. Whatever one agent left on a connection (a body the
// upstream read as a request of its own, an answer still to come) can then never reach
// another agent.
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace netbox::proxy {

class UpstreamPool {
 public:
  // As many as one io thread has requests in flight to one upstream under load: a pool
  // smaller than that closes connections after their response and dials new ones for the
  // next requests (with 16, B1 at 500 agent connections dialled for 58 % of requests).
  static constexpr std::size_t kMaxIdlePerKey = 256;
  static constexpr std::chrono::seconds kMaxIdle{30};
  // Keys kept (with or without idle connections) before put() sweeps out the empty ones.
  static constexpr std::size_t kMaxKeys = 1024;

  // The identity part of a key, once per agent connection.
  static std::string scope(std::string_view agent, const boost::asio::ip::address& client);
  // Writes the key into `out` (whose capacity is reused from one request to the next).
  static void key(std::string& out, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                  std::string_view host);
  // An idle connection that the upstream has not closed meanwhile, if any.
  std::optional<boost::asio::ip::tcp::socket> take(const std::string& key);
  void put(const std::string& key, boost::asio::ip::tcp::socket socket);
  std::size_t idle_count() const;

 private:
  struct Idle {
    boost::asio::ip::tcp::socket socket;
    std::chrono::steady_clock::time_point since;
  };
  std::unordered_map<std::string, std::vector<Idle>> idle_;
};

}  // namespace netbox::proxy
