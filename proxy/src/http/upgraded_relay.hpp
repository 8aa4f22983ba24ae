#pragma once
// A connection after the upstream's 101 to a WebSocket upgrade (upgraded_request.hpp):
// bytes both ways between the agent and the upstream, unread (WebSocket frames are not
// inspected), until either side ends or nothing moved for idle_timeout. One template over
// the agent's stream and the upstream's, plain (a captured, SOCKS5 or proxy-door
// connection) or TLS (an inspected one: AgentTlsStream takes one read and one write at
// once for this). Each direction reads and then writes, one piece at a time, so a slow
// reader holds back its sender (no queue grows); a direction gets its buffer only once the
// relay starts, and an HTTP connection that never upgrades holds none. The end of one
// direction half-closes the other side's socket (after a close_notify to an agent inside
// TLS, whose stack would answer a bare end with an alert); the relay ends when both have ended, or
// at once on an error or the idle limit. The bytes are counted into the request's row as
// they go, and charged to the exchange's ByteMeter before they are sent (issue 25): past
// a budget, what it still allows goes, then both sides close and the row says `budget`
// (Exchange::finish, from the meter); under limits.bandwidth_*, each piece sent earns its
// direction a pause (Pacer) before it reads again, as a tunnel's does.
#include "agents/agent_guard.hpp"
#include "http/pacer.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

template <class Client, class Upstream>
class UpgradedRelay {
 public:
  static constexpr std::size_t kPiece = 16 * 1024;
  // `done` gets the error that ended the relay (empty: both sides closed), once per start().
  using Done = std::function<void(std::string error)>;
  UpgradedRelay(Client& client, Done done) : client_(client), done_(std::move(done)) {}

  // `to_agent`: what the upstream sent after its 101 head; `to_upstream`: what the agent
  // sent after its request. `meter`: the exchange's, charged and paced by both directions.
  // `keep` holds the owner alive while the relay runs.
  void start(Upstream& upstream, std::string to_agent, std::string to_upstream, std::chrono::milliseconds idle_timeout,
             std::uint64_t& bytes_up, std::uint64_t& bytes_down, ByteMeter& meter, std::shared_ptr<void> keep);

 private:
  struct Half {
    std::unique_ptr<char[]> buf;
    std::string early;  // bytes to write before the first read
    std::uint64_t* bytes = nullptr;
    bool done = false;
    bool cut = false;  // a budget is spent: once what it allowed has gone, the relay ends
    Pacer pacer;       // limits.bandwidth_*: the pause after each piece sent
  };
  template <class From, class To>
  void pump(Half& h, From& from, To& to);
  template <class From, class To>
  void write(Half& h, From& from, To& to, const char* data, std::size_t n);
  // `n` bytes are about to go for `h`: how many of them its budgets let go.
  std::size_t allowed(Half& h, std::size_t n);
  template <class To>
  void cut(Half& h, To& to);
  template <class To>
  void half_done(Half& h, To& to, boost::beast::error_code ec, const char* side);
  template <class To>
  void end_sending(To& to);  // the other side's direction ended: tell `to` no more comes
  void arm_idle();
  void stop(std::string why);  // closes both sockets: what is under way ends with an error
  void finish();

  Client& client_;
  Done done_;
  Upstream* upstream_ = nullptr;
  ByteMeter* meter_ = nullptr;
  // The owner, for each step's handler to hold while it is pending. Weak: the owner holds
  // this relay, so a strong copy here would keep both alive for good once no step is pending
  // (an io_context destroyed at stop drops its handlers, and LeakSanitizer found the pair).
  std::weak_ptr<void> keep_;
  std::optional<boost::asio::steady_timer> idle_;
  std::chrono::milliseconds idle_timeout_{0};
  std::chrono::steady_clock::time_point last_activity_;
  Half up_;    // agent -> upstream
  Half down_;  // upstream -> agent
  std::string error_;
  bool finished_ = true;
};

}  // namespace netbox::proxy
