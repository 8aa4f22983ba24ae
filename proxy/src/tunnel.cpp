#include "tunnel.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";
}

Tunnel::Tunnel(Server::Impl& impl, tcp::socket client, tcp::socket upstream, std::string early_data,
               std::unique_ptr<Exchange> exchange, std::chrono::milliseconds idle_timeout)
    : impl_(impl),
      client_(std::move(client)),
      upstream_(std::move(upstream)),
      early_(std::move(early_data)),
      exchange_(std::move(exchange)),
      idle_timeout_(idle_timeout),
      idle_(client_.get_executor()),
      up_(std::make_unique<Half>()),
      down_(std::make_unique<Half>()) {
  up_->from = &client_;
  up_->to = &upstream_;
  down_->from = &upstream_;
  down_->to = &client_;
  impl_.counters.active_tunnels.fetch_add(1);
}

Tunnel::~Tunnel() {
  impl_.counters.active_tunnels.fetch_sub(1);
  if (exchange_) {
    exchange_->bytes_up = up_->bytes;
    exchange_->bytes_down = down_->bytes;
  }
}

void Tunnel::start() {
  last_activity_ = std::chrono::steady_clock::now();
  asio::async_write(client_, asio::buffer(kEstablished.data(), kEstablished.size()),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      self->on_established(ec);
                    });
}

void Tunnel::on_established(boost::system::error_code ec) {
  if (ec) {
    error_ = "writing 200 Connection Established failed: " + ec.message();
    return finish();
  }
  arm_idle();
  if (!early_.empty()) {
    up_->bytes += early_.size();
    asio::async_write(upstream_, asio::buffer(early_), [self = shared_from_this()](boost::system::error_code e,
                                                                                   std::size_t) {
      self->early_.clear();
      if (e) {
        self->abort("relaying to the upstream failed: " + e.message());
        return self->finish();
      }
      self->relay(*self->up_);
      self->relay(*self->down_);
    });
    return;
  }
  relay(*up_);
  relay(*down_);
}

void Tunnel::relay(Half& h) {
  h.from->async_read_some(asio::buffer(h.buf), [self = shared_from_this(), &h](boost::system::error_code ec,
                                                                                std::size_t n) {
    self->on_read(h, ec, n);
  });
}

void Tunnel::on_read(Half& h, boost::system::error_code ec, std::size_t n) {
  if (n > 0) {
    last_activity_ = std::chrono::steady_clock::now();
    h.bytes += n;
    asio::async_write(*h.to, asio::buffer(h.buf.data(), n),
                      [self = shared_from_this(), &h](boost::system::error_code e, std::size_t) {
                        self->on_written(h, e);
                      });
    return;
  }
  half_done(h, ec);
}

void Tunnel::on_written(Half& h, boost::system::error_code ec) {
  if (ec) return half_done(h, ec);
  last_activity_ = std::chrono::steady_clock::now();
  relay(h);
}

void Tunnel::half_done(Half& h, const boost::system::error_code& ec) {
  h.done = true;
  if (ec == asio::error::eof) {
    // Half-close: the other side may still have things to say.
    boost::system::error_code ignored;
    h.to->shutdown(tcp::socket::shutdown_send, ignored);
  } else if (ec != asio::error::operation_aborted) {
    if (error_.empty()) error_ = std::string(&h == up_.get() ? "agent" : "upstream") + " side: " + ec.message();
    boost::system::error_code ignored;
    client_.close(ignored);
    upstream_.close(ignored);
  }
  if (up_->done && down_->done) finish();
}

void Tunnel::arm_idle() {
  const auto deadline = last_activity_ + idle_timeout_;
  idle_.expires_at(deadline);
  idle_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_) return;
    if (std::chrono::steady_clock::now() - self->last_activity_ >= self->idle_timeout_)
      return self->abort("idle for " + std::to_string(self->idle_timeout_.count()) + " ms (limits.idle_timeout_ms)");
    self->arm_idle();
  });
}

void Tunnel::abort(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
}

void Tunnel::finish() {
  if (finished_) return;
  finished_ = true;
  idle_.cancel();
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
  if (exchange_) {
    exchange_->bytes_up = up_->bytes;
    exchange_->bytes_down = down_->bytes;
    exchange_->finish(200, error_);
    exchange_.reset();
  }
}

}  // namespace netbox::proxy
