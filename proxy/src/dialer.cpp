#include "dialer.hpp"

#include <boost/asio/steady_timer.hpp>

#include <memory>

namespace netbox::proxy {

namespace asio = boost::asio;

namespace {

struct DialAttempt : std::enable_shared_from_this<DialAttempt> {
  DialAttempt(asio::io_context& io, std::vector<asio::ip::tcp::endpoint> eps, std::chrono::milliseconds t,
              std::function<void(DialResult)> d)
      : ioc(io), endpoints(std::move(eps)), timeout(t), done(std::move(d)), socket(io), timer(io) {}

  asio::io_context& ioc;
  std::vector<asio::ip::tcp::endpoint> endpoints;
  std::chrono::milliseconds timeout;
  std::function<void(DialResult)> done;
  asio::ip::tcp::socket socket;
  asio::steady_timer timer;
  std::size_t next = 0;
  bool timed_out = false;
  DialFailure last = DialFailure::other;
  std::string errors;

  void try_next() {
    if (next >= endpoints.size()) {
      DialResult r{asio::ip::tcp::socket(ioc), endpoints.empty() ? asio::ip::tcp::endpoint{} : endpoints.back(),
                   last, errors};
      done(std::move(r));
      return;
    }
    const auto ep = endpoints[next++];
    socket = asio::ip::tcp::socket(ioc);
    timed_out = false;
    timer.expires_after(timeout);
    auto self = shared_from_this();
    timer.async_wait([self](boost::system::error_code ec) {
      if (ec) return;
      self->timed_out = true;
      boost::system::error_code ignored;
      self->socket.close(ignored);
    });
    socket.async_connect(ep, [self, ep](boost::system::error_code ec) {
      self->timer.cancel();
      if (!ec && !self->timed_out) {
        // Heads and bodies go out as separate writes: without TCP_NODELAY, Nagle holds the
        // second until the peer's delayed ACK (~40 ms per keep-alive response, measured in B1).
        boost::system::error_code ignored;
        self->socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        DialResult r{std::move(self->socket), ep, DialFailure::none, {}};
        self->done(std::move(r));
        return;
      }
      const auto where = ep.address().to_string() + " port " + std::to_string(ep.port());
      if (self->timed_out) {
        self->last = DialFailure::timeout;
        self->errors += (self->errors.empty() ? "" : "; ") + std::string("connecting to ") + where +
                        " timed out after " + std::to_string(self->timeout.count()) + " ms";
      } else {
        self->last = ec == asio::error::connection_refused ? DialFailure::refused : DialFailure::other;
        self->errors += (self->errors.empty() ? "" : "; ") + std::string("connecting to ") + where + " failed: " +
                        ec.message();
      }
      self->try_next();
    });
  }
};

}  // namespace

void dial(asio::io_context& ioc, std::vector<asio::ip::tcp::endpoint> endpoints, std::chrono::milliseconds timeout,
          std::function<void(DialResult)> done) {
  std::make_shared<DialAttempt>(ioc, std::move(endpoints), timeout, std::move(done))->try_next();
}

}  // namespace netbox::proxy
