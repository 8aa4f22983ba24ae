#include "proxy_load.hpp"

#include "support/proxy_client.hpp"

namespace netbox::test {

ProxyLoad::ProxyLoad(unsigned short proxy_port, std::string url_base, std::string tag, unsigned clients,
                     std::size_t per_client)
    : port_(proxy_port), url_base_(std::move(url_base)), tag_(std::move(tag)), per_client_(per_client) {
  for (unsigned i = 0; i < clients; ++i) clients_.emplace_back([this, i] { client_loop(i); });
}

ProxyLoad::~ProxyLoad() { stop(); }

void ProxyLoad::stop() {
  if (per_client_ == 0) loading_ = false;
  for (auto& t : clients_)
    if (t.joinable()) t.join();
  loading_ = false;
}

void ProxyLoad::wait_until_answered(std::size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (answered_count() < n && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

std::map<int, std::size_t> ProxyLoad::other_statuses() const {
  std::lock_guard lk(mu_);
  return others_;
}

std::size_t ProxyLoad::answered_count() const {
  std::lock_guard lk(mu_);
  return answered_.size();
}

std::map<std::string, ProxyLoad::Clock::time_point> ProxyLoad::answered() const {
  std::lock_guard lk(mu_);
  return answered_;
}

void ProxyLoad::client_loop(unsigned id) {
  std::size_t n = 0;
  const auto more = [&] { return loading_ && (per_client_ == 0 || n < per_client_); };
  while (more()) {
    try {
      ProxyConnection conn(port_, std::chrono::seconds(10));
      while (more()) {
        const std::string path = "/load/" + tag_ + "-" + std::to_string(id) + "-" + std::to_string(n++);
        auto r = conn.send("GET " + url_base_ + path + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
        if (r.status == 200) {
          std::lock_guard lk(mu_);
          answered_.emplace(path, Clock::now());
        } else if (r.status != 0) {
          std::lock_guard lk(mu_);
          ++others_[r.status];
        }
        if (r.status == 0 || r.header("connection") == "close") break;  // reconnect while loading
      }
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // refused: it was killed
    }
  }
}

}  // namespace netbox::test
