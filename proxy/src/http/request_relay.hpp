#pragma once
// The agent's request body, relayed to the upstream: the mirror of ResponseRelay. The
// forwarded head goes with the first piece of the body (one write), or alone when there
// is none; an agent that sent "Expect: 100-continue" is told to go on first. The body
// goes in pieces as they arrive (at most 64 KiB in memory, PieceBuffer), re-chunked when
// the agent chunked it, so an upload is never held whole and a slow one streams. For an
// agent with credentials each window (the held tail of the last piece and the new one,
// HeldTail) is scanned by the tripwire before any of it goes, the first window filled
// before the head goes: a placeholder split across two of the agent's writes, or across
// two pieces anywhere in the body, is seen whole. It reports one RequestBodyResult; what
// follows (the answer, a refusal) is the session's. One template over the agent's stream
// and the upstream's, like ResponseRelay.
// A request whose rule checks bodies (a BodyGate) is the exception to streaming: its
// pieces are gathered, up to the rule's body_window, and nothing goes upstream, not even
// the head, until the gate has allowed the whole body; one byte past the window, and the
// request is refused. The content rules' secret scan (content_rules.hpp) holds the first
// body_window bytes the same way (the head too) and scans them before any of it goes; the
// rest of a longer body then streams. With limits.bandwidth_up, each piece sent earns a
// pause (Pacer) before the next is read: the body is shaped like a tunnel, never dropped.
#include "http/body_gate.hpp"
#include "http/content_rules.hpp"
#include "agents/agent_guard.hpp"
#include "http/body_piece.hpp"
#include "http/pacer.hpp"
#include "inspect/credentials.hpp"
#include "http/request_head.hpp"

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

struct RequestBodyResult {
  enum class Kind {
    sent,             // head and body are with the upstream
    agent_failed,     // reading the agent's body failed (`ec`): the upstream has part of a request
    upstream_failed,  // writing to the upstream failed (`ec`)
    tripped,          // the tripwire refused the body (`refusal`); nothing of it went. Or a
                      // budget is spent: what it allowed went, the rest never will
    body_refused,     // the body gate refused it (its result()); nothing of the request went
  } kind = Kind::sent;
  boost::beast::error_code ec;
  std::optional<Refusal> refusal;
};

// What the relay needs to know of the body.
struct RequestBody {
  bool present = false;          // announced (Content-Length > 0 or chunked)
  bool chunked = false;          // it goes upstream chunked (the agent sent it chunked)
  bool expect_continue = false;  // the agent waits for "100 Continue" before sending it
  const Tripwire* tripwire = nullptr;  // scans it on its way to `host`:`port`
  const std::string* host = nullptr;
  std::uint16_t port = 0;
  BodyGate* gate = nullptr;  // the body is held whole and checked before anything goes
  ByteMeter* meter = nullptr;  // the agent's budgets: a body past one is cut there
  BodySecretScan scan;         // the content rules' secret scan of its first window
};

template <class Client, class Upstream>
class RequestRelay {
 public:
  using Done = std::function<void(RequestBodyResult)>;
  // `buffer` holds what was read from the agent after the head; `done` is called once per
  // start(), always from a completion handler.
  RequestRelay(Client& client, boost::beast::flat_buffer& buffer, PieceBuffer& pieces, Done done)
      : client_(client), buffer_(buffer), pieces_(pieces), done_(std::move(done)) {}

  // The forwarded head, to be filled before start() (its capacity is reused).
  std::string& head() { return out_; }
  // Some of the body was taken from the agent: the request cannot be sent again.
  bool started() const { return started_; }
  // A body must keep this average rate once idle_timeout has passed since its head
  // (docs/proxy.md): one trickling a byte at a time, each within idle_timeout of the
  // last, would otherwise hold its connection and upstream for ever.
  static constexpr std::uint64_t kMinBodyRate = 1024;  // bytes per second
  // Whether the body fell below kMinBodyRate (why its read timed out).
  bool below_min_rate() const { return std::chrono::steady_clock::now() >= rate_deadline(); }

  void start(Upstream& upstream, StreamingRequestParser& parser, const RequestBody& body,
             std::chrono::milliseconds idle_timeout, std::uint64_t& bytes_up, std::shared_ptr<void> keep);

 private:
  void send_continue();
  void read_piece();
  void piece(boost::beast::error_code ec);
  void hold(std::size_t got, bool last);  // a gated or scanned body: gather, then check the whole
  std::size_t hold_window() const;
  std::optional<Refusal> tripwire_on_whole() const;
  bool gate_refuses();
  void send(std::size_t n, bool last, const char* data);
  void metered_send(std::size_t n, bool last, const char* data);
  void on_written(boost::beast::error_code ec);
  void budget_spent();
  void finish(RequestBodyResult r);
  std::chrono::steady_clock::time_point rate_deadline() const;  // when the body falls below kMinBodyRate

  Client& client_;
  boost::beast::flat_buffer& buffer_;
  PieceBuffer& pieces_;
  Done done_;
  // The relay under way.
  Upstream* upstream_ = nullptr;
  StreamingRequestParser* parser_ = nullptr;
  RequestBody body_;
  HeldTail tail_;
  std::chrono::milliseconds idle_timeout_{0};
  std::uint64_t* bytes_up_ = nullptr;
  // The owner, for each step's handler to hold while it is pending. Weak: the owner holds
  // this relay, so a strong copy here would keep both alive for good once no step is pending
  // (an io_context destroyed at stop drops its handlers, and LeakSanitizer found the pair).
  std::weak_ptr<void> keep_;
  std::string out_;         // the head (first write only) and chunk framing
  std::string whole_;       // a gated body, gathered until its gate decides
  std::size_t held_ = 0;    // bytes at the front of the piece buffer, kept from the last piece
  std::size_t sending_ = 0; // body bytes of the write under way
  std::size_t sending_head_ = 0;  // head bytes of the write under way (its first only)
  Pacer pacer_;  // limits.bandwidth_up: the pause after each piece sent
  std::chrono::steady_clock::time_point began_;  // the body's relay started
  std::uint64_t received_ = 0;  // body bytes read from the agent so far
  bool head_pending_ = false;
  bool last_ = false;
  bool started_ = false;
  bool cut_ = false;  // a budget allowed only part of this piece: the relay ends after it
  bool tail_placed_ = false;  // the held tail is at the front of the piece buffer already
};

}  // namespace netbox::proxy
