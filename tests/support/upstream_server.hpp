#pragma once
// A real HTTP/1.1 server on 127.0.0.1 for proxy tests (Beast, one thread per connection).
// Paths:
//   /echo...       200, JSON body: method, target, host, headers, body (the default for any path)
//   /body          200, the request body sent back verbatim
//   /big?n=BYTES   200, BYTES of a fixed pattern (see pattern_bytes), with Content-Length
//   /chunked?n=BYTES  the same, chunked
//   /early-hints   a 103 interim response first, then the echo
//   /stall         reads the request, never answers
//   /close         reads the request, closes without answering
//   /garbage       answers with bytes that are not HTTP
// It counts accepted connections, so tests can see keep-alive pooling.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {

class UpstreamServer {
 public:
  UpstreamServer();
  ~UpstreamServer();
  UpstreamServer(const UpstreamServer&) = delete;
  UpstreamServer& operator=(const UpstreamServer&) = delete;

  unsigned short port() const { return port_; }
  std::uint64_t connections() const { return connections_.load(); }
  std::uint64_t requests() const { return requests_.load(); }
  // Requests being handled right now (for cap tests: /stall holds one open).
  std::uint64_t in_flight() const { return in_flight_.load(); }
  void stop();

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> connections_{0};
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> in_flight_{0};
  std::mutex mu_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// The deterministic content of /big: byte i is (i * 131 + 7) mod 251.
std::string pattern_bytes(std::size_t n);

}  // namespace netbox::test
