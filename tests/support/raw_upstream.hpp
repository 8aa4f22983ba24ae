#pragma once
// A loopback TCP server whose every connection runs a test's own handler on plain file
// descriptors, for upstreams that misbehave on purpose: never answering, endless bodies,
// malformed responses, resets mid-body. (UpstreamServer is the well-behaved one.)
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace netbox::test {

class RawUpstream {
 public:
  // Runs on its own thread per connection; `index` counts connections from 0. The
  // server closes `fd` when the handler returns (with a reset if reset_on_close was called).
  using Handler = std::function<void(RawUpstream& server, int fd, std::size_t index)>;

  explicit RawUpstream(Handler handler);
  ~RawUpstream();
  RawUpstream(const RawUpstream&) = delete;
  RawUpstream& operator=(const RawUpstream&) = delete;

  unsigned short port() const { return port_; }
  std::size_t connections() const { return connections_.load(); }
  // Request heads read by read_head() on this server's connections.
  std::size_t requests() const { return requests_.load(); }
  bool stopping() const { return stopping_.load(); }
  void stop();

  // Reads one request head (through the blank line) and counts it; "" on EOF, error or
  // after `timeout`. Bytes after the head are left in `pending` for the next call.
  std::string read_head(int fd, std::string& pending, std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  void accept_loop();

  Handler handler_;
  int listen_fd_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> requests_{0};
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// Writes all of `data`; false once the peer is gone (EPIPE, reset, shutdown by stop()).
bool send_all(int fd, std::string_view data);
// Makes the coming close() send a TCP reset instead of a FIN (SO_LINGER 0).
void reset_on_close(int fd);

}  // namespace netbox::test
