#pragma once
// A blind tunnel (a CONNECT, a SOCKS5 or a captured connection, once TargetStep admitted,
// dialled and answered it and checked its first message: target_step.hpp): relays bytes
// both ways, the early ones first, until both sides have closed (half-close honoured) or
// nothing moved for idle_timeout.
//
// An idle tunnel holds its two sockets and nothing else: each direction gets its relay
// pipe (splice path) or buffer (buffer path) only once bytes are waiting, and gives it
// back as soon as it has drained everything and the source has nothing more to read.
// Ten thousand idle tunnels then cost a few KiB and two fds each, not 128 KiB and six.
#include "pipeline/exchange.hpp"
#include "base/door_services.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

class Tunnel : public std::enable_shared_from_this<Tunnel> {
 public:
  static constexpr std::size_t kBufferSize = 64 * 1024;
  static constexpr std::size_t kBurstSize = 16 * 1024;  // a burst's first bytes, relayed by copy

  Tunnel(DoorServices& impl, boost::asio::ip::tcp::socket client, boost::asio::ip::tcp::socket upstream,
         std::string early_data, Exchange exchange, std::chrono::milliseconds idle_timeout);
  ~Tunnel();
  void start();

 private:
  struct Half {
    boost::asio::ip::tcp::socket* from = nullptr;
    boost::asio::ip::tcp::socket* to = nullptr;
    std::unique_ptr<char[]> buf;  // buffer path only, while bytes are on their way
    std::uint64_t bytes = 0;
    bool done = false;
    // splice(2) path: bytes move socket -> pipe -> socket without entering user space.
    int pipe_r = -1;
    int pipe_w = -1;
    std::size_t in_pipe = 0;
    bool eof = false;
    bool bulk = false;  // this burst filled the small buffer: it goes on through a pipe
    bool cut = false;   // a budget is spent: once what it allowed has gone, the tunnel ends
    // limits.bandwidth_*: the pause the bytes under way earned, waited out before the next read.
    std::chrono::steady_clock::duration pause{};
    std::unique_ptr<boost::asio::steady_timer> pacer;  // made on the first pause
    bool pausing = false;  // a pause is under way: the idle clock stands still (arm_idle)
  };
  enum class Burst { moved, waiting };  // waiting: a wait or write is under way, or the half is done
  void relay(Half& h);
  void wait_readable(Half& h);
  void buffer_step(Half& h);
  void splice_step(Half& h);
  // The pipe's bytes on to the other side / the source's bytes into the pipe. True: go on
  // with the step; false: it ended here (waiting for the socket, or the direction is done).
  bool drain_pipe(Half& h);
  bool fill_pipe(Half& h);
  Burst burst_step(Half& h);
  bool open_pipe(Half& h);
  static void close_pipe(Half& h);
  void pass_on(Half& h, boost::system::error_code ec, std::size_t n);  // after a read: write what came, or end the half
  void on_written(Half& h, boost::system::error_code ec);
  void half_done(Half& h, const boost::system::error_code& ec);
  void paced_relay(Half& h);  // relay(h) once its pause is over
  // `n` bytes read for `h`: how many of them its budgets let go (the rest never leaves).
  std::size_t allowed(Half& h, std::size_t n);
  void cut(Half& h);
  void arm_idle();
  void abort(std::string why);
  void finish();

  DoorServices& impl_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  std::string early_;
  Exchange exchange_;  // taken over from the session: completed when the tunnel ends
  std::chrono::milliseconds idle_timeout_;
  boost::asio::steady_timer idle_;
  std::chrono::steady_clock::time_point last_activity_;
  Half up_;    // agent -> upstream
  Half down_;  // upstream -> agent
  std::string error_;
  bool finished_ = false;
  bool use_splice_ = false;
};

}  // namespace netbox::proxy
