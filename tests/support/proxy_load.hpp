#pragma once
// Keep-alive clients sending GETs with unique paths (/load/TAG-CLIENT-N) through a proxy,
// each client's requests one after the other, recording every 200 answer and when it came.
// A client whose connection fails reconnects until the load stops.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {

class ProxyLoad {
 public:
  using Clock = std::chrono::steady_clock;
  // `url_base` like "http://upstream.test:8080"; `per_client` 0: until stop().
  ProxyLoad(unsigned short proxy_port, std::string url_base, std::string tag, unsigned clients,
            std::size_t per_client = 0);
  ~ProxyLoad();
  ProxyLoad(const ProxyLoad&) = delete;
  ProxyLoad& operator=(const ProxyLoad&) = delete;

  void stop();  // and join the clients (also: every client sent its per_client requests)
  void wait_until_answered(std::size_t n, std::chrono::milliseconds timeout);
  std::size_t answered_count() const;
  std::map<std::string, Clock::time_point> answered() const;
  // Answers other than 200, by status (503: the audit store refused the row).
  std::map<int, std::size_t> other_statuses() const;

 private:
  void client_loop(unsigned id);

  unsigned short port_;
  std::string url_base_;
  std::string tag_;
  std::size_t per_client_;
  std::atomic<bool> loading_{true};
  std::vector<std::thread> clients_;
  mutable std::mutex mu_;
  std::map<std::string, Clock::time_point> answered_;
  std::map<int, std::size_t> others_;
};

}  // namespace netbox::test
