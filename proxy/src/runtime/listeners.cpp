// The proxy's own listeners (HTTP and SOCKS5): one SO_REUSEPORT acceptor per io thread,
// each running the one accept loop (accept_loop.hpp), whose connections enter the
// pipeline at take_client_slot (agent_connection.hpp).
#include "pipeline/accept_loop.hpp"
#include "pipeline/agent_connection.hpp"
#include "http/http_session.hpp"
#include "base/proxy_runtime.hpp"
#include "doors/socks_session.hpp"
#include "doors/tls_door.hpp"
#include "pipeline/target.hpp"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>

#include <sys/socket.h>

#include <stdexcept>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string ep_text(const tcp::endpoint& ep) { return authority(ep.address().to_string(), ep.port()); }

std::shared_ptr<tcp::acceptor> open_acceptor(asio::io_context& ioc, const tcp::endpoint& ep, bool reuse_port) {
  auto acc = std::make_shared<tcp::acceptor>(ioc);
  boost::system::error_code ec;
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && reuse_port) {
    int one = 1;
    if (::setsockopt(acc->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
      ec = boost::system::error_code(errno, boost::system::system_category());
  }
  if (!ec && ep.address().is_v6()) acc->set_option(asio::ip::v6_only(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("--listen " + ep_text(ep) + ": " + ec.message());
  return acc;
}

}  // namespace

tcp::endpoint ProxyRuntime::add_listener(const tcp::endpoint& ep, ListenerKind kind) {
  if (is_stopping()) throw std::runtime_error("the proxy is shutting down");
  tcp::endpoint bound = ep;
  // A plain bind first: SO_REUSEPORT alone would quietly share a port with another
  // proxy already listening there instead of reporting "address in use".
  {
    asio::io_context probe_ctx;
    auto probe = open_acceptor(probe_ctx, ep, false);
    bound = probe->local_endpoint();
  }
  protect(bound);  // before the first accept: nothing may reach a listener through the proxy
  std::vector<std::shared_ptr<tcp::acceptor>> accs;
  for (auto& w : workers) accs.push_back(open_acceptor(w->ioc, bound, true));
  for (std::size_t i = 0; i < workers.size(); ++i) {
    asio::post(workers[i]->ioc, [this, w = workers[i].get(), acc = accs[i], bound, kind] {
      w->acceptors[bound] = acc;
      accept_loop(*w, acc, kind);
    });
  }
  {
    std::lock_guard lock(listeners_mu);
    listeners.push_back(bound);
  }
  if (lifecycle == Lifecycle::running) {  // start() says the rest
    if (kind == ListenerKind::socks)
      log.write(log_event::listening, {{log_key::address, ep_text(bound)}, {log_key::protocol, "socks5"}});
    else if (kind == ListenerKind::https)
      log.write(log_event::listening, {{log_key::address, ep_text(bound)}, {log_key::protocol, "https"}});
    else
      log.write(log_event::listening, {{log_key::address, ep_text(bound)}});
  }
  return bound;
}

void ProxyRuntime::remove_listener(const tcp::endpoint& ep) {
  {
    std::lock_guard lock(listeners_mu);
    std::erase(listeners, ep);
  }
  own.remove(ep);
  publish_endpoints();
  if (is_stopping()) return;  // every acceptor closes with its io_context anyway
  for (auto& w : workers) {
    asio::post(w->ioc, [w = w.get(), ep] {
      if (auto it = w->acceptors.find(ep); it != w->acceptors.end()) {
        boost::system::error_code ec;
        it->second->close(ec);
        w->acceptors.erase(it);
      }
    });
  }
  log.write(log_event::listener_closed, {{log_key::address, ep_text(ep)}});
}

std::vector<tcp::endpoint> ProxyRuntime::local_endpoints() const {
  std::lock_guard lock(listeners_mu);
  return listeners;
}

void ProxyRuntime::accept_loop(Worker& w, std::shared_ptr<tcp::acceptor> acc, ListenerKind kind) {
  tcp::acceptor& a = *acc;
  accept_with_backoff(*this, a, kind == ListenerKind::socks ? "socks5" : kind == ListenerKind::https ? "https" : "http",
                      std::move(acc),
                      [this, &w, kind](tcp::socket s) { take_connection(w, std::move(s), kind); });
}

void ProxyRuntime::take_connection(Worker& w, tcp::socket s, ListenerKind kind) {
  const auto door = kind == ListenerKind::socks ? DoorKind::socks : DoorKind::http;
  // Refused on a TLS listener: an alert the client's TLS reads, never plaintext in its place.
  auto slot = take_client_slot(*this, s, door, kind != ListenerKind::https);
  if (!slot) {
    if (kind == ListenerKind::https) refuse_tls_connection(std::move(s));
    return;
  }
  if (kind == ListenerKind::https)
    take_tls_connection(*this, w, std::move(s), std::move(*slot));
  else if (door == DoorKind::socks)
    std::make_shared<SocksSession>(*this, w, std::move(s), std::move(*slot))->start();
  else
    std::make_shared<ClientSession>(*this, w, std::move(s), std::move(*slot))->start();
}

void note_accept_error(DoorServices& rt, std::string_view listener, const boost::system::error_code& ec) {
  rt.counters.accept_errors.fetch_add(1);
  if (rt.accept_error_log.note())
    rt.log.write(log_event::accept_error, {{log_key::listener, listener},
                                           {log_key::error, ec.message()},
                                           {log_key::count, rt.accept_error_log.take()},
                                           {log_key::pause_ms, kAcceptPause.count()}});
}

}  // namespace netbox::proxy
