#pragma once
// The upstream's answer to one forwarded request, relayed to the agent: its head read
// and made fit for the agent (headers.hpp), then its body in pieces as they arrive (a
// download never sits in memory whole; a trickling stream goes on at once), re-chunked
// when its length is unknown. It reports one RelayResult; what follows (pooling the
// upstream connection, completing the row, the next request) is the session's. One
// template over the agent's stream and the upstream's (plain, or TLS inside an inspected
// connection); each operation is timed on the tcp_stream below (beast::get_lowest_layer).
// An answer to a request a credential went into (AnswerRedaction) has its head checked
// before it goes and its body searched window by window, the held tail of one piece with
// the next; it goes out chunked, since a replaced secret changes its length. With
// limits.bandwidth_down, each piece written earns a pause (Pacer) before the upstream is
// read again: the answer is shaped like a tunnel's, never dropped.
#include "agents/agent_guard.hpp"
#include "http/body_piece.hpp"
#include "http/pacer.hpp"
#include "http/request_head.hpp"
#include "base/counters.hpp"
#include "inspect/credentials.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

struct RelayResult {
  int status = 0;          // the upstream's status as relayed (0 when none was)
  std::uint64_t bytes = 0; // body bytes relayed to the agent
  std::string error;       // empty: the response went through whole
  // Nothing went to the agent: netbox answers with this status (502, 504) instead, with
  // `error` as its reason. 0 when the response started or ended.
  unsigned answer = 0;
  // A reused connection closed before any byte of an answer. With `resend` the request
  // goes again on a fresh connection (nothing was answered); else `answer` says so.
  bool unanswered = false;
  bool resend = false;
  bool started = false;    // some of the response reached the agent: an error cuts it
  bool keep_alive = false; // the agent's connection may carry another request
  bool reusable = false;   // the upstream connection ended clean and may be pooled
  // The upstream switched to the WebSocket the request asked for: its 101 went to the
  // agent, and the connection becomes an UpgradedRelay (take_early: what came after it).
  bool upgraded = false;
};

// What the relay needs to know of the request.
struct RelayedRequest {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  unsigned version = 11;  // the agent's HTTP version: the response goes out in it
  bool keep_alive = false;
  bool reused_upstream = false;
  bool may_resend = false;  // sending it again cannot do twice what the agent asked once
  const AnswerRedaction* redaction = nullptr;  // a credential went into the request
  bool upgrade = false;     // it asked for a WebSocket: a 101 may answer it
  ByteMeter* meter = nullptr;  // the agent's budgets: a body past one is cut there
};

template <class Client, class Upstream>
class ResponseRelay {
 public:
  using Done = std::function<void(RelayResult)>;
  // `done` is called once per start(), always from a completion handler.
  ResponseRelay(Client& client, PieceBuffer& pieces, Counters& counters, Done done)
      : client_(client), pieces_(pieces), counters_(counters), done_(std::move(done)) {}

  // `keep` holds the owner alive while a step is under way; `bytes_down` counts the body
  // bytes relayed, as they go (the exchange's, so a connection that dies mid-way records them).
  void start(Upstream& upstream, const RelayedRequest& req, std::chrono::milliseconds idle_timeout,
             std::uint64_t& bytes_down, std::shared_ptr<void> keep);
  // After an upgraded result: the upstream's bytes read past its 101 head, for the agent.
  std::string take_early();

 private:
  void read_header();
  void on_header(boost::beast::error_code ec);
  void header_failed(boost::beast::error_code ec);  // no head came: resend, or 502/504
  std::string unsearchable(const std::string& codings) const;
  void switch_protocols();  // a 101 to a WebSocket upgrade: its head to the agent, then done
  void read_piece();
  void piece_read(boost::beast::error_code ec);
  void send_piece(const char* data, std::size_t got);
  void redact_piece(std::size_t got);
  void send_allowed(const char* data, std::size_t n);  // the window through AnswerRedaction, then on
  void on_piece_written(boost::beast::error_code ec);
  void fail(unsigned answer, std::string error);  // before anything went to the agent
  void finish(std::string error);

  Client& client_;
  PieceBuffer& pieces_;
  Counters& counters_;
  Done done_;
  // The relay under way.
  Upstream* upstream_ = nullptr;
  RelayedRequest req_;
  std::chrono::milliseconds idle_timeout_{0};
  std::uint64_t* bytes_down_ = nullptr;
  // The owner, for each step's handler to hold while it is pending. Weak: the owner holds
  // this relay, so a strong copy here would keep both alive for good once no step is pending
  // (an io_context destroyed at stop drops its handlers, and LeakSanitizer found the pair).
  std::weak_ptr<void> keep_;
  boost::beast::flat_buffer buffer_{kReadBufferLimit};
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  // The response head and chunk framing on their way out; kept across requests so its
  // capacity is reused.
  std::string out_;
  std::string window_;  // with a redaction: the held tail and the new piece
  std::size_t sent_ = 0;  // of window_, by the write under way
  RelayResult result_;
  Pacer pacer_;  // limits.bandwidth_down: the pause after each piece written
  bool head_pending_ = false;  // the response head is in out_ and has not been written
  bool chunked_ = false;       // the agent's response is re-chunked
  bool last_piece_ = false;    // the piece being written ends the response
  bool cut_ = false;           // a budget allowed only part of the piece: the answer ends after it
  bool header_held_ = false;   // the response header waits for the first body piece
  bool upstream_keep_alive_ = false;
};

}  // namespace netbox::proxy
