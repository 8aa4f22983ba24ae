#include "http/request_relay.hpp"

#include "inspect/agent_tls_stream.hpp"
#include "http/head_writer.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::start(Upstream& upstream, StreamingRequestParser& parser, const RequestBody& body,
                                           std::chrono::milliseconds idle_timeout, std::uint64_t& bytes_up,
                                           std::shared_ptr<void> keep) {
  upstream_ = &upstream;
  parser_ = &parser;
  body_ = body;
  tail_ = body.tripwire ? body.tripwire->body_tail(*body.host, body.port) : HeldTail{};
  idle_timeout_ = idle_timeout;
  bytes_up_ = &bytes_up;
  keep_ = std::move(keep);
  held_ = 0;
  started_ = false;
  cut_ = false;
  tail_placed_ = false;
  head_pending_ = true;
  whole_.clear();
  began_ = std::chrono::steady_clock::now();
  pacer_.restart();
  received_ = 0;
  if (!body.present) {
    if (gate_refuses()) return;
    return send(0, true, nullptr);
  }
  // The head goes with the first piece of the body, which is read only now.
  if (body.expect_continue) return send_continue();
  read_piece();
}

// The agent asked to hear whether its body is wanted before sending it: it is, now that
// the request is admitted and an upstream connection is ready.
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::send_continue() {
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  beast::get_lowest_layer(client_).expires_after(idle_timeout_);
  asio::async_write(client_, asio::buffer(kContinue.data(), kContinue.size()),
                    [this, keep = keep_.lock()](beast::error_code ec, std::size_t) {
                      if (ec) return finish({RequestBodyResult::Kind::agent_failed, ec, {}});
                      read_piece();
                    });
}

// Up to 64 KiB of the body into the piece buffer, after the held tail: first from what is
// already in buffer_ (parsed here and now), then from the agent's stream.
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::read_piece() {
  auto& body = parser_->get().body();
  const std::size_t room = PieceBuffer::kSize - held_;
  body.data = pieces_.get() + held_;
  body.size = room;
  if (buffer_.size() > 0) {
    // As much as is here goes into one piece (many small chunks make one write); a piece
    // with something in it goes on at once rather than wait for more.
    beast::error_code ec;
    do {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (used == 0 && !ec) ec = http::error::need_more;  // no progress: never spin
    } while (!ec && !parser_->is_done() && buffer_.size() > 0 && body.size > 0);
    if (ec == http::error::need_more && body.size < room) ec = {};
    if (ec != http::error::need_more) return piece(ec);
  }
  // Whichever comes first: idle_timeout of silence, or the body's average rate falling
  // below kMinBodyRate (a slow drip whose every pause is short).
  beast::get_lowest_layer(client_).expires_at(
      std::min(std::chrono::steady_clock::now() + idle_timeout_, rate_deadline()));
  http::async_read_some(client_, buffer_, *parser_,
                        [this, keep = keep_.lock()](beast::error_code ec, std::size_t) { piece(ec); });
}

template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::piece(beast::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return finish({RequestBodyResult::Kind::agent_failed, ec, {}});
  const std::size_t got = PieceBuffer::kSize - parser_->get().body().size;  // the held tail included
  received_ += got - held_;
  const bool last = parser_->is_done();
  // Only framing arrived (a chunk header): nothing to pass on yet.
  if (got == held_ && !last) return read_piece();
  started_ = true;
  if (body_.gate || body_.scan.active()) return hold(got, last);
  // For an agent with credentials, the first piece is filled (64 KiB, or the whole body)
  // before the head goes: nothing of a request whose first 64 KiB hold a placeholder
  // reaches the upstream.
  if (body_.tripwire && head_pending_ && !last && got < PieceBuffer::kSize) {
    held_ = got;
    return read_piece();
  }
  const std::string_view window(pieces_.get(), got);
  if (body_.tripwire) {
    if (auto r = body_.tripwire->check_body(*body_.host, body_.port, window))
      return finish({RequestBodyResult::Kind::tripped, {}, std::move(r)});
  }
  const std::size_t n = got - (last ? 0 : tail_.of(window));
  held_ = got - n;
  if (n == 0 && !last) return read_piece();
  metered_send(n, last, pieces_.get());
}

// Each piece joins the body held whole; a body past the window is refused as soon as it
// is (its rest is never read), a complete one is checked, then sent in one write.
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::hold(std::size_t got, bool last) {
  whole_.append(pieces_.get(), got);
  held_ = 0;
  // A gate needs one byte past its window to refuse a larger body; the scan, its window.
  if (!last && (body_.gate ? whole_.size() <= hold_window() : whole_.size() < hold_window())) return read_piece();
  if (auto r = tripwire_on_whole()) return finish({RequestBodyResult::Kind::tripped, {}, std::move(r)});
  if (auto r = body_.scan.check(whole_)) return finish({RequestBodyResult::Kind::tripped, {}, std::move(r)});
  if (gate_refuses()) return;
  // Report mode lets a body past the window go, as does the scan: what is held goes, the
  // rest streams (the tripwire's held tail joining the next piece, as it would have).
  std::size_t n = whole_.size();
  if (!last) {
    body_.gate = nullptr;
    body_.scan = {};
    if (body_.tripwire) {
      held_ = tail_.of(whole_);
      n -= held_;
      std::memcpy(pieces_.get(), whole_.data() + n, held_);
      tail_placed_ = true;
    }
  }
  metered_send(n, last, whole_.data());
}

// The tripwire reads at most Tripwire::kBodyScan at once, and a held body may be longer:
// it is read in windows that overlap by the tripwire's held tail, so a placeholder lying
// across two of them is seen whole.
template <class Client, class Upstream>
std::optional<Refusal> RequestRelay<Client, Upstream>::tripwire_on_whole() const {
  if (!body_.tripwire) return std::nullopt;
  const std::string_view whole(whole_);
  for (std::size_t at = 0;;) {
    const auto window = whole.substr(at, Tripwire::kBodyScan);
    if (auto r = body_.tripwire->check_body(*body_.host, body_.port, window)) return r;
    if (at + window.size() >= whole.size()) return std::nullopt;
    at += window.size() - std::min(tail_.of(window), window.size() - 1);
  }
}

template <class Client, class Upstream>
std::size_t RequestRelay<Client, Upstream>::hold_window() const {
  if (!body_.gate) return body_.scan.window;
  return body_.scan.active() ? std::max(body_.gate->window(), body_.scan.window) : body_.gate->window();
}

// The gate's answer on what is held (the whole body, or more than the window of it).
template <class Client, class Upstream>
bool RequestRelay<Client, Upstream>::gate_refuses() {
  if (!body_.gate || !body_.gate->check(whole_).refused()) return false;
  finish({RequestBodyResult::Kind::body_refused, {}, {}});
  return true;
}

// One write, charged to the agent's budgets first: past one, what it still allows goes and
// the request ends there (the rest is never sent).
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::metered_send(std::size_t n, bool last, const char* data) {
  if (body_.meter && n > 0) {
    const auto ok = static_cast<std::size_t>(body_.meter->up(n));
    if (ok < n) {
      cut_ = true;
      if (ok == 0) return budget_spent();
      held_ = 0;
      return send(ok, false, data);
    }
  }
  send(n, last, data);
}

// A budget is spent: the upstream has part of the body and is dropped; the agent is
// answered 403 naming the budget (the session's, as for a tripped body).
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::budget_spent() {
  const auto& cut = *body_.meter->cut();
  finish({RequestBodyResult::Kind::tripped, {}, Refusal{403, Outcome::budget, {}, cut.rule, cut.reason, {}}});
}

// One write to the upstream: the head if it has not gone yet, `n` body bytes (a chunk of
// their own when the body goes chunked; an empty piece is never one, where it would read
// as the last), and the end of the body once the agent's has ended.
template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::send(std::size_t n, bool last, const char* data) {
  // The head is the agent's to fill (64 KiB of fields a request): it counts against the
  // budgets and in the row as its body does, or headers would carry data past them uncounted.
  sending_head_ = head_pending_ ? out_.size() : 0;
  if (sending_head_ > 0 && body_.meter && body_.meter->up(sending_head_) < sending_head_) return budget_spent();
  last_ = last;
  sending_ = n;
  if (!head_pending_) out_.clear();
  head_pending_ = false;
  const auto tail = body_.present ? frame_piece(out_, body_.chunked, n, last) : std::string_view{};
  const std::array<asio::const_buffer, 3> pieces{asio::buffer(out_), asio::buffer(n > 0 ? data : nullptr, n),
                                                 asio::buffer(tail.data(), tail.size())};
  beast::get_lowest_layer(*upstream_).expires_after(idle_timeout_);
  asio::async_write(*upstream_, pieces, [this, keep = keep_.lock()](beast::error_code ec, std::size_t) { on_written(ec); });
}

template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::on_written(beast::error_code ec) {
  if (ec) return finish({RequestBodyResult::Kind::upstream_failed, ec, {}});
  *bytes_up_ += sending_head_ + sending_;
  if (cut_) return budget_spent();
  // The held tail moves to the front, where the next piece joins it.
  if (held_ > 0 && !std::exchange(tail_placed_, false)) std::memmove(pieces_.get(), pieces_.get() + sending_, held_);
  // limits.bandwidth_up: what just went earned a pause before the agent is read again (the
  // last piece's is the bucket's debt: the agent's next relay waits it out).
  const auto pause = body_.meter ? body_.meter->pace_up(sending_head_ + sending_) : Pacer::Duration::zero();
  if (last_) return finish({});
  pacer_.after(pause, beast::get_lowest_layer(client_).get_executor(), [this, keep = keep_.lock()] { read_piece(); });
}

template <class Client, class Upstream>
std::chrono::steady_clock::time_point RequestRelay<Client, Upstream>::rate_deadline() const {
  // The pauses of limits.bandwidth_up are netbox's, not the agent's slowness.
  return began_ + idle_timeout_ + std::chrono::microseconds(received_ * 1'000'000 / kMinBodyRate) +
         pacer_.paused();
}

template <class Client, class Upstream>
void RequestRelay<Client, Upstream>::finish(RequestBodyResult r) {
  auto keep = keep_.lock();  // the owner lives until done_ returns
  keep_.reset();
  if (whole_.capacity() > 0) std::string().swap(whole_);  // up to a window (16 MiB at most) is not kept
  done_(std::move(r));
}

template class RequestRelay<beast::tcp_stream, beast::tcp_stream>;
template class RequestRelay<AgentTlsStream, UpstreamPool::TlsStream>;

}  // namespace netbox::proxy
