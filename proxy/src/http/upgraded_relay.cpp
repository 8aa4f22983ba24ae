#include "http/upgraded_relay.hpp"

#include "inspect/agent_tls_stream.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <type_traits>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

template <class Client, class Upstream>
void UpgradedRelay<Client, Upstream>::start(Upstream& upstream, std::string to_agent, std::string to_upstream,
                                            std::chrono::milliseconds idle_timeout, std::uint64_t& bytes_up,
                                            std::uint64_t& bytes_down, ByteMeter& meter, std::shared_ptr<void> keep) {
  upstream_ = &upstream;
  meter_ = &meter;
  keep_ = std::move(keep);
  idle_timeout_ = idle_timeout;
  error_.clear();
  finished_ = false;
  up_ = Half{std::make_unique<char[]>(kPiece), std::move(to_upstream), &bytes_up, false, false, {}};
  down_ = Half{std::make_unique<char[]>(kPiece), std::move(to_agent), &bytes_down, false, false, {}};
  // The relay's own idle timer bounds it: the streams' per-operation timers would end a
  // direction that is merely quiet while the other one talks.
  beast::get_lowest_layer(client_).expires_never();
  beast::get_lowest_layer(upstream).expires_never();
  if (!idle_) idle_.emplace(client_.get_executor());
  last_activity_ = std::chrono::steady_clock::now();
  arm_idle();
  pump(up_, client_, upstream);
  pump(down_, upstream, client_);
}

template <class Client, class Upstream>
template <class From, class To>
void UpgradedRelay<Client, Upstream>::pump(Half& h, From& from, To& to) {
  if (!h.early.empty()) {
    // The early bytes stay in h.early until written: pump() is not called again before.
    const std::size_t n = h.early.size();
    return write(h, from, to, h.early.data(), n);
  }
  from.async_read_some(asio::buffer(h.buf.get(), kPiece),
                       [this, keep = keep_.lock(), &h, &from, &to](beast::error_code ec, std::size_t n) {
                         if (n > 0) return write(h, from, to, h.buf.get(), n);
                         half_done(h, to, ec ? ec : asio::error::eof, &h == &up_ ? "agent" : "upstream");
                       });
}

// One piece on, charged to the budgets first (the early bytes too); once it is written,
// the pause it earned is waited out before the direction reads again.
template <class Client, class Upstream>
template <class From, class To>
void UpgradedRelay<Client, Upstream>::write(Half& h, From& from, To& to, const char* data, std::size_t n) {
  last_activity_ = std::chrono::steady_clock::now();
  n = allowed(h, n);
  if (n == 0) return cut(h, to);
  *h.bytes += n;
  asio::async_write(to, asio::buffer(data, n), [this, keep = keep_.lock(), &h, &from, &to](beast::error_code ec, std::size_t sent) {
    if (!h.early.empty()) h.early = std::string();
    if (ec) return half_done(h, to, ec, &h == &up_ ? "upstream" : "agent");
    if (h.cut) return cut(h, to);
    last_activity_ = std::chrono::steady_clock::now();
    const auto pause = &h == &up_ ? meter_->pace_up(sent) : meter_->pace_down(sent);
    h.pacer.after(pause, client_.get_executor(), [this, keep = keep_.lock(), &h, &from, &to] {
      if (!error_.empty()) return half_done(h, to, asio::error::operation_aborted, "");  // stopped while paused
      last_activity_ = std::chrono::steady_clock::now();
      pump(h, from, to);
    });
  });
}

template <class Client, class Upstream>
std::size_t UpgradedRelay<Client, Upstream>::allowed(Half& h, std::size_t n) {
  const auto ok = static_cast<std::size_t>(&h == &up_ ? meter_->up(n) : meter_->down(n));
  if (ok < n) h.cut = true;
  return ok;
}

// A budget is spent: both sides close (the other direction's read or pause ends with
// them), and the row names the budget (Exchange::finish, from the meter).
template <class Client, class Upstream>
template <class To>
void UpgradedRelay<Client, Upstream>::cut(Half& h, To& to) {
  stop(meter_->cut()->reason);
  half_done(h, to, asio::error::operation_aborted, "");
}

template <class Client, class Upstream>
template <class To>
void UpgradedRelay<Client, Upstream>::half_done(Half& h, To& to, beast::error_code ec, const char* side) {
  h.done = true;
  h.buf.reset();
  // A TLS stream's end is the peer's close_notify or its truncation: both end the direction.
  const bool ended = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
  if (ended) {
    end_sending(to);  // half-close: the other side may still have things to say
  } else if (ec != asio::error::operation_aborted) {
    stop(std::string(side) + " side: " + ec.message());
  }
  if (up_.done && down_.done) finish();
}

template <class Client, class Upstream>
template <class To>
void UpgradedRelay<Client, Upstream>::end_sending(To& to) {
  const auto half_close = [&to] {
    beast::error_code ignored;
    beast::get_lowest_layer(to).socket().shutdown(tcp::socket::shutdown_send, ignored);
  };
  if constexpr (std::is_same_v<To, AgentTlsStream>) {
    // The write side is free: this direction wrote its last piece before reading the end.
    return to.async_shutdown([keep = keep_.lock(), half_close](beast::error_code, std::size_t) { half_close(); });
  }
  half_close();
}

template <class Client, class Upstream>
void UpgradedRelay<Client, Upstream>::arm_idle() {
  const auto deadline = [this] {
    return idle_deadline(last_activity_, idle_timeout_, up_.pacer.pausing() || down_.pacer.pausing());
  };
  idle_->expires_at(deadline());
  idle_->async_wait([this, deadline, keep = keep_.lock()](beast::error_code ec) {
    if (ec || finished_) return;
    if (std::chrono::steady_clock::now() >= deadline())
      return stop("idle for " + std::to_string(idle_timeout_.count()) + " ms (limits.idle_timeout_ms)");
    arm_idle();
  });
}

template <class Client, class Upstream>
void UpgradedRelay<Client, Upstream>::stop(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  beast::error_code ignored;
  beast::get_lowest_layer(client_).socket().close(ignored);
  beast::get_lowest_layer(*upstream_).socket().close(ignored);
  up_.pacer.cancel();  // a direction waiting out a pause ends now, not when it is over
  down_.pacer.cancel();
}

template <class Client, class Upstream>
void UpgradedRelay<Client, Upstream>::finish() {
  if (finished_) return;
  finished_ = true;
  idle_->cancel();
  auto keep = keep_.lock();  // the owner lives until done_ returns
  keep_.reset();
  done_(std::move(error_));
}

template class UpgradedRelay<beast::tcp_stream, beast::tcp_stream>;
template class UpgradedRelay<AgentTlsStream, UpstreamPool::TlsStream>;
// The TLS listener's bridge to the request loop (tls_door.hpp).
template class UpgradedRelay<AgentTlsStream, beast::tcp_stream>;

}  // namespace netbox::proxy
