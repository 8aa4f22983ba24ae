#pragma once
// Name resolution with c-ares, driven by one io_context: c-ares tells us which sockets
// it wants watched (ARES_OPT_SOCK_STATE_CB); Asio waits on them and on c-ares' timeout,
// and calls ares_process_fd. No thread pool, no getaddrinfo. One Resolver per io thread.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct ares_channeldata;
struct ares_addrinfo;

namespace netbox::proxy {

struct ResolveResult {
  std::vector<boost::asio::ip::address> addresses;  // A and AAAA answers in the order received
  std::string error;                                // empty on success
  bool from_cache = false;
};

class Resolver {
 public:
  using Callback = std::function<void(ResolveResult)>;
  // Empty `servers`: those of /etc/resolv.conf. Throws std::runtime_error if c-ares
  // cannot be set up.
  Resolver(boost::asio::io_context& ioc, const std::vector<boost::asio::ip::udp::endpoint>& servers);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Calls `cb` on this io_context (never inline) with the addresses of `name`.
  void resolve(const std::string& name, Callback cb);

 private:
  struct Watch;
  struct Query;
  static void on_sock_state(void* data, int fd, int readable, int writable);
  static void on_addrinfo(void* arg, int status, int timeouts, ::ares_addrinfo* res);
  void sock_state(int fd, bool readable, bool writable);
  void arm(const std::shared_ptr<Watch>& w);
  void process(int read_fd, int write_fd);
  void reset_timer();
  void finish(Query* q, ResolveResult r, std::chrono::seconds ttl);

  boost::asio::io_context& ioc_;
  ares_channeldata* channel_ = nullptr;
  boost::asio::steady_timer timer_;
  std::map<int, std::shared_ptr<Watch>> watches_;
  struct CacheEntry {
    std::vector<boost::asio::ip::address> addresses;
    std::chrono::steady_clock::time_point expires;
  };
  std::unordered_map<std::string, CacheEntry> cache_;
};

}  // namespace netbox::proxy
