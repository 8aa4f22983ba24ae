#include "upstream/tunnel.hpp"

#include "http/pacer.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Tunnel::Tunnel(DoorServices& impl, tcp::socket client, tcp::socket upstream, std::string early_data,
               Exchange exchange, std::chrono::milliseconds idle_timeout)
    : impl_(impl),
      client_(std::move(client)),
      upstream_(std::move(upstream)),
      early_(std::move(early_data)),
      exchange_(std::move(exchange)),
      idle_timeout_(idle_timeout),
      idle_(client_.get_executor()) {
  up_.from = &client_;
  up_.to = &upstream_;
  down_.from = &upstream_;
  down_.to = &client_;
  impl_.counters.active_tunnels.fetch_add(1);
  use_splice_ = impl_.options.tunnel_relay == TunnelRelay::splice;
  // Shaped bytes go through the buffer path: its 64 KiB reads bound each pause.
  if (exchange_.meter.paced()) use_splice_ = false;
}

Tunnel::~Tunnel() {
  close_pipe(up_);
  close_pipe(down_);
  impl_.counters.active_tunnels.fetch_sub(1);
  exchange_.bytes_up = up_.bytes;  // for a tunnel cut off by shutdown: the member completes it
  exchange_.bytes_down = down_.bytes;
}

void Tunnel::start() {
  last_activity_ = std::chrono::steady_clock::now();
  // Both relay paths read speculatively and only then wait for readiness: the splice
  // path with MSG_DONTWAIT / SPLICE_F_NONBLOCK on descriptors Asio already made
  // non-blocking; the buffer path sets Asio's own flag when it first reads (buffer_step).
  arm_idle();
  if (!early_.empty()) early_.resize(allowed(up_, early_.size()));
  if (!early_.empty()) {
    up_.bytes += early_.size();
    asio::async_write(upstream_, asio::buffer(early_), [self = shared_from_this()](boost::system::error_code e,
                                                                                   std::size_t) {
      self->early_.clear();
      self->early_.shrink_to_fit();
      if (e) {
        self->abort("relaying to the upstream failed: " + e.message());
        return self->finish();
      }
      self->relay(self->up_);
      self->relay(self->down_);
    });
    return;
  }
  relay(up_);
  relay(down_);
}

void Tunnel::relay(Half& h) {
  if (use_splice_) return splice_step(h);
  buffer_step(h);
}

// Asio's reactor is edge-triggered and forgets readiness nobody waited for, so a wait
// always follows a read attempt that found nothing (never the other way round).
void Tunnel::wait_readable(Half& h) {
  h.from->async_wait(tcp::socket::wait_read, [self = shared_from_this(), &h](boost::system::error_code ec) {
    if (ec) return self->half_done(h, ec);
    self->relay(h);
  });
}

void Tunnel::buffer_step(Half& h) {
  if (!h.buf) h.buf.reset(new char[kBufferSize]);  // not value-initialised: no 64 KiB memset
  boost::system::error_code ec;
  // Without it Asio's synchronous read_some would poll() and block the thread.
  if (!h.from->non_blocking()) h.from->non_blocking(true, ec);
  const std::size_t n = h.from->read_some(asio::buffer(h.buf.get(), kBufferSize), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    h.buf.reset();  // idle: the buffer goes back until the next bytes arrive
    return wait_readable(h);
  }
  pass_on(h, ec, n);
}

std::size_t Tunnel::allowed(Half& h, std::size_t n) {
  auto& meter = exchange_.meter;
  const auto ok = static_cast<std::size_t>(&h == &up_ ? meter.up(n) : meter.down(n));
  if (ok < n) h.cut = true;
  return ok;
}

// A budget is spent: the tunnel ends (both sockets closed, the other half's wait ends
// with them), and its row says which budget (Exchange::finish, from the meter).
void Tunnel::cut(Half& h) {
  abort(exchange_.meter.cut()->reason);
  half_done(h, asio::error::operation_aborted);
}

void Tunnel::pass_on(Half& h, boost::system::error_code ec, std::size_t n) {
  if (n > 0) n = allowed(h, n);
  if (n > 0) {
    last_activity_ = std::chrono::steady_clock::now();
    h.bytes += n;
    h.pause = &h == &up_ ? exchange_.meter.pace_up(n) : exchange_.meter.pace_down(n);
    asio::async_write(*h.to, asio::buffer(h.buf.get(), n),
                      [self = shared_from_this(), &h](boost::system::error_code e, std::size_t) {
                        self->on_written(h, e);
                      });
    return;
  }
  if (h.cut) return cut(h);
  half_done(h, ec);
}

bool Tunnel::open_pipe(Half& h) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  h.pipe_r = fds[0];
  h.pipe_w = fds[1];
  ::fcntl(h.pipe_w, F_SETPIPE_SZ, 1024 * 1024);  // fewer wakeups per MiB; best effort
  return true;
}

void Tunnel::close_pipe(Half& h) {
  if (h.pipe_r >= 0) ::close(h.pipe_r);
  if (h.pipe_w >= 0) ::close(h.pipe_w);
  h.pipe_r = h.pipe_w = -1;
  h.in_pipe = 0;
}

void Tunnel::splice_step(Half& h) {
  // A bounded number of moves per turn, so one busy tunnel cannot starve the thread.
  for (int round = 0; round < 16; ++round) {
    if (h.in_pipe > 0) {
      if (!drain_pipe(h)) return;
      continue;
    }
    if (h.cut) return cut(h);
    if (h.eof) return half_done(h, asio::error::eof);
    if (h.pipe_r < 0 && !h.bulk) {
      // A burst starts through a small buffer: most tunnels carry a request and its answer,
      // a few KiB each way, and for those one recv and one send beat making, filling,
      // draining and closing a pipe (seven system calls). Only a burst that fills the
      // buffer goes on through a pipe.
      if (burst_step(h) == Burst::waiting) return;
      continue;
    }
    if (h.pipe_r < 0) {
      // No pipe while idle: look (without taking) whether anything waits before making one.
      char c;
      const auto p = ::recv(h.from->native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (p == 0) {
        h.eof = true;
        continue;
      }
      if (p < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return wait_readable(h);
        return half_done(h, boost::system::error_code(errno, boost::system::system_category()));
      }
      // Out of fds for a pipe: this burst goes through user space instead.
      if (!open_pipe(h)) return buffer_step(h);
    }
    if (!fill_pipe(h)) return;
  }
  asio::post(client_.get_executor(), [self = shared_from_this(), &h] { self->splice_step(h); });
}

bool Tunnel::drain_pipe(Half& h) {
  const auto n =
      ::splice(h.pipe_r, nullptr, h.to->native_handle(), nullptr, h.in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (n > 0) {
    h.in_pipe -= static_cast<std::size_t>(n);
    last_activity_ = std::chrono::steady_clock::now();
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    h.to->async_wait(tcp::socket::wait_write, [self = shared_from_this(), &h](boost::system::error_code ec) {
      if (ec) return self->half_done(h, ec);
      self->splice_step(h);
    });
    return false;
  }
  half_done(h, boost::system::error_code(n < 0 ? errno : EPIPE, boost::system::system_category()));
  return false;
}

bool Tunnel::fill_pipe(Half& h) {
  const auto n =
      ::splice(h.from->native_handle(), nullptr, h.pipe_w, nullptr, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (n > 0) {
    // What the budgets refuse stays in the pipe, which is closed with the tunnel.
    const auto ok = allowed(h, static_cast<std::size_t>(n));
    h.in_pipe += ok;
    h.bytes += ok;
    last_activity_ = std::chrono::steady_clock::now();
    return true;
  }
  if (n == 0) {
    h.eof = true;
    return true;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    close_pipe(h);  // drained and nothing more to read: an idle direction holds no pipe
    h.bulk = false;  // the next burst starts small again
    wait_readable(h);
    return false;
  }
  half_done(h, boost::system::error_code(errno, boost::system::system_category()));
  return false;
}

Tunnel::Burst Tunnel::burst_step(Half& h) {
  // Per thread, not per tunnel: it is empty again before this returns (sent, or the rest
  // copied to h.buf), so idle tunnels hold no buffer.
  thread_local char scratch[kBurstSize];
  const auto n = ::recv(h.from->native_handle(), scratch, kBurstSize, MSG_DONTWAIT);
  if (n == 0) {
    h.eof = true;
    return Burst::moved;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) wait_readable(h);
    else half_done(h, boost::system::error_code(errno, boost::system::system_category()));
    return Burst::waiting;
  }
  const auto got = allowed(h, static_cast<std::size_t>(n));
  if (got == 0) {
    cut(h);
    return Burst::waiting;
  }
  h.bytes += got;
  last_activity_ = std::chrono::steady_clock::now();
  if (got == kBurstSize) h.bulk = true;  // more is likely waiting: it goes through a pipe
  const auto sent = ::send(h.to->native_handle(), scratch, got, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (sent >= 0 && static_cast<std::size_t>(sent) == got) return Burst::moved;
  if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    half_done(h, boost::system::error_code(errno, boost::system::system_category()));
    return Burst::waiting;
  }
  // The destination is full: the rest waits in a buffer of its own until it drains.
  const std::size_t done = sent > 0 ? static_cast<std::size_t>(sent) : 0;
  const std::size_t rest = got - done;
  h.buf.reset(new char[rest]);
  std::memcpy(h.buf.get(), scratch + done, rest);
  asio::async_write(*h.to, asio::buffer(h.buf.get(), rest),
                    [self = shared_from_this(), &h](boost::system::error_code e, std::size_t) {
                      h.buf.reset();
                      self->on_written(h, e);
                    });
  return Burst::waiting;
}

void Tunnel::on_written(Half& h, boost::system::error_code ec) {
  if (ec) return half_done(h, ec);
  if (h.cut) return cut(h);
  last_activity_ = std::chrono::steady_clock::now();
  if (h.pause > std::chrono::steady_clock::duration::zero()) return paced_relay(h);
  relay(h);
}

// The direction reads nothing until its bucket has paid back what it sent: the sender
// is slowed by TCP's own flow control, and no byte is dropped.
void Tunnel::paced_relay(Half& h) {
  if (!h.pacer) h.pacer = std::make_unique<asio::steady_timer>(client_.get_executor());
  h.pacer->expires_after(std::exchange(h.pause, {}));
  h.pausing = true;
  h.pacer->async_wait([self = shared_from_this(), &h](boost::system::error_code ec) {
    h.pausing = false;
    if (ec || self->finished_) return self->half_done(h, asio::error::operation_aborted);
    self->last_activity_ = std::chrono::steady_clock::now();
    self->relay(h);
  });
}

void Tunnel::half_done(Half& h, const boost::system::error_code& ec) {
  h.done = true;
  h.buf.reset();
  close_pipe(h);
  if (ec == asio::error::eof) {
    // Half-close: the other side may still have things to say.
    boost::system::error_code ignored;
    h.to->shutdown(tcp::socket::shutdown_send, ignored);
  } else if (ec != asio::error::operation_aborted) {
    if (error_.empty()) error_ = std::string(&h == &up_ ? "agent" : "upstream") + " side: " + ec.message();
    boost::system::error_code ignored;
    client_.close(ignored);
    upstream_.close(ignored);
  }
  if (up_.done && down_.done) finish();
}

void Tunnel::arm_idle() {
  idle_.expires_at(idle_deadline(last_activity_, idle_timeout_, up_.pausing || down_.pausing));
  idle_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_) return;
    const bool pausing = self->up_.pausing || self->down_.pausing;
    if (std::chrono::steady_clock::now() >= idle_deadline(self->last_activity_, self->idle_timeout_, pausing))
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
  for (Half* h : {&up_, &down_})
    if (h->pacer) h->pacer->cancel();
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
  exchange_.bytes_up = up_.bytes;
  exchange_.bytes_down = down_.bytes;
  exchange_.finish(200, error_);
}

}  // namespace netbox::proxy
