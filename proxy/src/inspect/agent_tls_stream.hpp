#pragma once
// The server side of an inspected connection's TLS (issue 16): OpenSSL over two memory
// BIOs, with only the socket below. It replaces boost::asio::ssl::stream there because
// that one keeps two 17 KiB buffers of its own per stream and a 17 KiB BIO pair each way
// for the life of the connection, most of the memory of an idle inspected connection
// (docs/bench.md). Here an idle connection holds 1 KiB of read buffer: the socket is read
// into it (and a larger input on into the stack) and from there into the engine's input
// BIO; output goes from the engine's output BIO into a string that is written and cleared.
// Both BIOs hold only what is in flight and are replaced when they grew past a record.
// The request loop runs one operation at a time (it reads a request, then writes its
// answer); a WebSocket relay runs one read and one write at once (Op says how).
// `early` (the ClientHello netbox already read to check it) is the engine's first input.
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace netbox::proxy {

class AgentTlsStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;
  using lowest_layer_type = boost::asio::ip::tcp::socket;
  using next_layer_type = boost::beast::tcp_stream;

  // Throws std::runtime_error when OpenSSL cannot allocate the session.
  AgentTlsStream(boost::asio::ip::tcp::socket socket, SSL_CTX* ctx, std::string_view early);
  ~AgentTlsStream();
  // Only between operations (an inspected connection hands its stream to the request
  // loop after the handshake).
  AgentTlsStream(AgentTlsStream&& o) noexcept
      : socket_(std::move(o.socket_)),
        ssl_(std::exchange(o.ssl_, nullptr)),
        in_(std::exchange(o.in_, nullptr)),
        out_bio_(std::exchange(o.out_bio_, nullptr)),
        out_(std::move(o.out_)) {}
  AgentTlsStream& operator=(AgentTlsStream&&) = delete;
  AgentTlsStream(const AgentTlsStream&) = delete;
  AgentTlsStream& operator=(const AgentTlsStream&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_.socket(); }
  // The timed stream below: its expires_after() bounds each operation (a timeout ends one
  // with beast::error::timeout), as on a plain connection (beast::get_lowest_layer).
  next_layer_type& next_layer() { return socket_; }
  SSL* native_handle() { return ssl_; }
  // What the agent sent that the engine has not taken in yet (at most about a record).
  std::size_t input_held() const { return BIO_ctrl_pending(in_); }

  template <class Token>
  auto async_handshake(Token&& token) {
    return run(Handshake{}, std::forward<Token>(token));
  }
  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return run(Read{first(buffers)}, std::forward<Token>(token));
  }
  // Sends the close_notify that tells the agent the stream ended (not a truncation, which
  // its TLS stack would answer with an alert). Runs beside a read, like a write.
  template <class Token>
  auto async_shutdown(Token&& token) {
    return run(Shutdown{}, std::forward<Token>(token));
  }
  // A gather write (head, body piece, chunk framing) goes as one TLS record: its buffers
  // are joined (64 KiB at most) rather than written one record each.
  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return run(Write{joined(buffers)}, std::forward<Token>(token));
  }

 private:
  // What one step of the engine did.
  enum class Step { done, want_input, failed };

  struct Handshake {
    int operator()(SSL* s, std::size_t& n) const {
      n = 0;
      return SSL_do_handshake(s);
    }
  };
  struct Read {
    boost::asio::mutable_buffer b;
    int operator()(SSL* s, std::size_t& n) const {
      n = 0;
      return b.size() == 0 ? 1 : SSL_read_ex(s, b.data(), b.size(), &n);
    }
  };
  struct Write {
    boost::asio::const_buffer b;
    // A large write goes in slices, so the output BIO never holds more than a few records.
    int operator()(SSL* s, std::size_t& n) const {
      n = 0;
      if (b.size() == 0) return 1;
      return SSL_write_ex(s, b.data(), std::min<std::size_t>(b.size(), kWriteSlice), &n);
    }
  };
  static constexpr std::size_t kWriteSlice = 64 * 1024;
  struct Shutdown {
    int operator()(SSL* s, std::size_t& n) const {
      n = 0;
      const int r = SSL_shutdown(s);
      return r == 0 ? 1 : r;  // 0: ours is sent, the agent's not yet read (nor awaited)
    }
  };

  template <class Buffers>
  static auto first(const Buffers& buffers) {
    using Buffer = std::conditional_t<boost::asio::is_mutable_buffer_sequence<Buffers>::value,
                                      boost::asio::mutable_buffer, boost::asio::const_buffer>;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      Buffer b(*it);
      if (b.size() != 0) return b;
    }
    return Buffer();
  }

  template <class Buffers>
  boost::asio::const_buffer joined(const Buffers& buffers) {
    std::size_t parts = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it)
      parts += boost::asio::const_buffer(*it).size() != 0;
    if (parts < 2) return first(buffers);
    gather_.resize(std::min(boost::asio::buffer_size(buffers), kWriteSlice));
    gather_.resize(boost::asio::buffer_copy(boost::asio::buffer(gather_), buffers));
    return boost::asio::buffer(gather_);
  }

  // Interprets the engine's return value `r`; on failure sets `ec`.
  Step classify(int r, boost::system::error_code& ec);
  // Moves what the engine wrote into out_; true when there is something to send.
  bool take_output();
  // Gives the engine the `n` bytes read into in_chunk_; when they filled it, also what
  // else the socket has ready (a large record), without waiting.
  void feed(std::size_t n);
  // Frees the BIOs' buffers that grew past a record, while nothing is in them.
  void trim();

  // One operation (handshake, read or write) over the engine. At most one read and one
  // write may be under way at once (the WebSocket relay, upgraded_relay.hpp), interleaved
  // on the socket's one thread: the engine's calls never overlap, but both may need the
  // socket. So the socket has one reader (reading_) and one writer (writing_) at a time;
  // an operation that needs the side another holds waits on gate_ until it is free. A read
  // that leaves output (an alert, a key update) while a write is under way leaves it in
  // the output BIO, which that write drains before it completes; a write waits for its own
  // bytes to be on the socket before completing (so a slow agent holds back its sender).
  template <class Action>
  struct Op {
    static constexpr bool kWrites = std::is_same_v<Action, Write> || std::is_same_v<Action, Shutdown>;
    AgentTlsStream& s;
    Action action;
    enum class Phase { start, wrote, readable, gated, posted } phase = Phase::start;
    bool suspended = false;  // the handler may be invoked directly (not from the initiator)
    bool finished = false;   // the engine's step is over; its output is flushed first
    boost::system::error_code result;
    std::size_t n = 0;

    template <class Self>
    void operator()(Self& self, boost::system::error_code ec = {}, std::size_t bytes = 0) {
      switch (phase) {
        case Phase::start:
          if constexpr (kWrites) s.write_op_ = true;
          break;
        case Phase::posted:
          return self.complete(result, n);
        case Phase::wrote:
          s.writing_ = false;
          s.out_.clear();
          if (s.out_.capacity() > kWriteSlice) std::string().swap(s.out_);
          s.wake();
          // A failed handshake's reason outlives the failure to send its alert.
          if (finished && (result || ec)) return complete(self, result ? result : ec, 0);
          if (ec) return complete(self, ec, 0);
          if (finished) return flush(self);  // what else came meanwhile (another operation's)
          break;
        case Phase::readable:
          s.reading_ = false;
          s.wake();
          if (ec) {
            // The agent's side closed without a TLS close_notify, as asio's stream reports it.
            return complete(self, ec == boost::asio::error::eof ? boost::asio::ssl::error::stream_truncated : ec, 0);
          }
          s.feed(bytes);
          break;
        case Phase::gated:
          if (finished) return flush(self);
          break;
      }
      step(self);
    }

    template <class Self>
    void step(Self& self) {
      ERR_clear_error();
      std::size_t got = 0;
      const int r = action(s.ssl_, got);
      if (s.classify(r, result) == Step::want_input) {
        // A handshake flight goes out before its answer is awaited.
        if (s.output_pending() && !s.writing_) return send(self);
        if (s.reading_) return wait(self);
        s.trim();
        s.reading_ = true;
        phase = Phase::readable;
        suspended = true;
        return s.socket_.async_read_some(boost::asio::buffer(s.in_chunk_), std::move(self));
      }
      finished = true;
      n = got;
      flush(self);
    }

    // Alerts, handshake messages, tickets and a write's records go out before it completes.
    template <class Self>
    void flush(Self& self) {
      if (!s.output_pending()) return complete(self, result, n);
      if (s.writing_) {
        if constexpr (kWrites) return wait(self);
        return complete(self, result, n);  // the write under way drains it
      }
      send(self);
    }

    template <class Self>
    void send(Self& self) {
      s.writing_ = true;
      s.take_output();
      phase = Phase::wrote;
      suspended = true;
      boost::asio::async_write(s.socket_, boost::asio::buffer(s.out_), std::move(self));
    }

    template <class Self>
    void wait(Self& self) {
      phase = Phase::gated;
      suspended = true;
      s.gate().async_wait(std::move(self));
    }

    template <class Self>
    void complete(Self& self, boost::system::error_code ec, std::size_t bytes) {
      if constexpr (kWrites) s.write_op_ = false;
      if (suspended) return self.complete(ec, bytes);
      // Never from inside the initiating call.
      result = ec;
      n = bytes;
      phase = Phase::posted;
      boost::asio::post(std::move(self));  // on the handler's executor
    }
  };

  template <class Action, class Token>
  auto run(Action action, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
        Op<Action>{*this, action, Op<Action>::Phase::start, false, false, {}, 0}, token, socket_);
  }

  bool output_pending() const { return BIO_ctrl_pending(out_bio_) > 0; }
  // Created the first time two operations want the same side of the socket (rare: a read
  // leaving an alert or a key update while a write is on its way); never expires.
  boost::asio::steady_timer& gate() {
    if (!gate_) {
      gate_ = std::make_unique<boost::asio::steady_timer>(socket_.get_executor());
      gate_->expires_at(boost::asio::steady_timer::time_point::max());
    }
    return *gate_;
  }
  // The side an operation waited for is free: every waiting operation looks again.
  void wake() {
    if (gate_) gate_->cancel();
  }

  boost::beast::tcp_stream socket_;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_bio_ = nullptr;  // owned by ssl_
  std::string out_;     // being written to the socket
  std::string gather_;  // a gather write's buffers, joined
  std::unique_ptr<boost::asio::steady_timer> gate_;  // see Op
  bool reading_ = false;   // an operation reads the socket
  bool writing_ = false;   // an operation writes out_ to the socket
  bool write_op_ = false;  // a write is under way (its slice may point into gather_)
  // What the socket is read into while the agent is idle: most requests fit, and it is
  // all a connection holds between them.
  std::array<char, 1024> in_chunk_;
};

}  // namespace netbox::proxy
