#include "upstream/dialer.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <memory>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string where(const tcp::endpoint& ep) { return ep.address().to_string() + " port " + std::to_string(ep.port()); }

struct DialAttempt : std::enable_shared_from_this<DialAttempt> {
  // One address being connected to.
  struct Try {
    explicit Try(asio::io_context& io, tcp::endpoint e) : socket(io), timer(io), ep(e) {}
    tcp::socket socket;
    asio::steady_timer timer;
    tcp::endpoint ep;
    bool timed_out = false;
  };

  DialAttempt(asio::io_context& io, std::vector<tcp::endpoint> eps, DialLimits l, std::function<void(DialResult)> d)
      : ioc(io), endpoints(std::move(eps)), limits(l), done(std::move(d)), budget(io), stagger(io) {
    if (endpoints.size() > DialLimits::kMaxAddresses) {
      skipped = endpoints.size() - DialLimits::kMaxAddresses;
      endpoints.resize(DialLimits::kMaxAddresses);
    }
  }

  asio::io_context& ioc;
  std::vector<tcp::endpoint> endpoints;
  DialLimits limits;
  std::function<void(DialResult)> done;
  asio::steady_timer budget;
  asio::steady_timer stagger;
  std::vector<std::unique_ptr<Try>> tries;
  std::size_t skipped = 0;
  std::size_t in_flight = 0;
  bool finished = false;
  bool any_timeout = false;
  bool out_of_descriptors = false;
  DialFailure last = DialFailure::other;
  std::string errors;

  void start() {
    if (endpoints.empty()) return fail(DialFailure::other, "no address to connect to");
    budget.expires_after(limits.budget);
    budget.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->finished) return;
      self->fail(DialFailure::timeout, "gave up connecting after " + std::to_string(self->limits.budget.count()) +
                                           " ms (the dial budget) with " + std::to_string(self->tries.size()) +
                                           " of " + std::to_string(self->endpoints.size()) + " addresses tried");
    });
    start_next();
  }

  void start_next() {
    if (finished) return;
    if (tries.size() < endpoints.size() && in_flight < DialLimits::kMaxInFlight) launch(endpoints[tries.size()]);
    if (tries.size() < endpoints.size() && in_flight < DialLimits::kMaxInFlight) {
      // The next one goes out after the stagger unless this one (or another) fails first.
      stagger.expires_after(DialLimits::kStagger);
      stagger.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->start_next();
      });
    }
  }

  // Opens the socket below the descriptor ceiling, closing idle pooled connections for
  // room if it came out above; empty when that worked, else why not.
  std::string open_within_budget(tcp::socket& s, const tcp::endpoint& ep) {
    for (;;) {
      boost::system::error_code ec;
      s.open(ep.protocol(), ec);
      if (ec) {
        // Out of descriptors all the same (the limit lowered, a burst of accepts): an idle
        // connection is worth less than this request.
        const bool out = ec == asio::error::no_descriptors || ec.value() == ENFILE;
        if (out && limits.pool && limits.pool->close_oldest()) continue;
        return "opening a socket for " + where(ep) + " failed: " + ec.message();
      }
      if (s.native_handle() < limits.fd_ceiling) return {};
      s.close(ec);
      if (!limits.pool || !limits.pool->close_oldest())
        return "the proxy has no descriptor to spare for another upstream connection (descriptors from " +
               std::to_string(limits.fd_ceiling) + " up are kept for accepting agents and the audit store)";
    }
  }

  void launch(const tcp::endpoint& ep) {
    auto fresh = std::make_unique<Try>(ioc, ep);
    if (auto why = open_within_budget(fresh->socket, ep); !why.empty()) {
      out_of_descriptors = true;
      note(why);
      endpoints.resize(tries.size());  // no further address is tried
      if (in_flight == 0) fail(DialFailure::descriptors, {});
      return;
    }
    tries.push_back(std::move(fresh));
    Try& t = *tries.back();
    ++in_flight;
    t.timer.expires_after(limits.connect_timeout);
    t.timer.async_wait([self = shared_from_this(), &t](boost::system::error_code ec) {
      if (ec) return;
      t.timed_out = true;
      boost::system::error_code ignored;
      t.socket.close(ignored);
    });
    t.socket.async_connect(ep, [self = shared_from_this(), &t](boost::system::error_code ec) { self->on_connect(t, ec); });
  }

  void on_connect(Try& t, boost::system::error_code ec) {
    --in_flight;
    t.timer.cancel();
    if (finished) return;
    if (!ec && !t.timed_out) {
      // Heads and bodies go out as separate writes: without TCP_NODELAY, Nagle holds the
      // second until the peer's delayed ACK (~40 ms per keep-alive response, measured in B1).
      boost::system::error_code ignored;
      t.socket.set_option(asio::ip::tcp::no_delay(true), ignored);
      finished = true;
      close_all(&t);
      done(DialResult{std::move(t.socket), t.ep, DialFailure::none, {}});
      return;
    }
    if (t.timed_out) {
      last = DialFailure::timeout;
      any_timeout = true;
      note("connecting to " + where(t.ep) + " timed out after " + std::to_string(limits.connect_timeout.count()) + " ms");
    } else {
      last = ec == asio::error::connection_refused ? DialFailure::refused : DialFailure::other;
      note("connecting to " + where(t.ep) + " failed: " + ec.message());
    }
    if (in_flight == 0 && tries.size() == endpoints.size())
      return fail(out_of_descriptors ? DialFailure::descriptors : any_timeout ? DialFailure::timeout : last, {});
    start_next();  // a failure starts the next address at once (RFC 8305 §5)
  }

  void note(const std::string& what) { errors += (errors.empty() ? "" : "; ") + what; }

  void close_all(Try* keep) {
    boost::system::error_code ignored;
    budget.cancel();
    stagger.cancel();
    for (auto& t : tries) {
      if (t.get() == keep) continue;
      t->timer.cancel();
      t->socket.close(ignored);
    }
  }

  void fail(DialFailure why, const std::string& what) {
    finished = true;
    close_all(nullptr);
    if (!what.empty()) note(what);
    if (skipped) note(std::to_string(skipped) + " more addresses were not tried (at most " +
                      std::to_string(DialLimits::kMaxAddresses) + " are)");
    const auto ep = tries.empty() ? (endpoints.empty() ? tcp::endpoint{} : endpoints.front()) : tries.back()->ep;
    done(DialResult{tcp::socket(ioc), ep, why, errors});
  }
};

}  // namespace

void dial(asio::io_context& ioc, std::vector<tcp::endpoint> endpoints, DialLimits limits,
          std::function<void(DialResult)> done) {
  std::make_shared<DialAttempt>(ioc, std::move(endpoints), limits, std::move(done))->start();
}

}  // namespace netbox::proxy
