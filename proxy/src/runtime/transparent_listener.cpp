#include "runtime/transparent_listener.hpp"

#include <unistd.h>

#include "agents/agent_sockets.hpp"
#include "doors/transparent_session.hpp"
#include "pipeline/accept_loop.hpp"
#include "pipeline/agent_connection.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace ip = boost::asio::ip;
using tcp = ip::tcp;

TransparentListener::TransparentListener(ProxyRuntime& rt, Worker& w, const ip::address& host, unsigned short port)
    : rt_(rt), worker_(w), acceptor_(w.ioc) {
  try {
    const tcp::endpoint ep(host, port);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    bound_ = acceptor_.local_endpoint();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot listen for captured connections on " + host.to_string() + ": " +
                             e.code().message());
  }
  rt_.protect(bound_);  // never a destination, like every listener
  protected_ = true;
}

TransparentListener::TransparentListener(ProxyRuntime& rt, Worker& w, int fd) : rt_(rt), worker_(w), acceptor_(w.ioc) {
  try {
    acceptor_.assign(socket_family(fd) == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    bound_ = acceptor_.local_endpoint();
  } catch (const boost::system::system_error& e) {
    ::close(fd);
    throw std::runtime_error("the agent's capture socket: " + e.code().message());
  }
}

void TransparentListener::start() {
  asio::post(worker_.ioc, [self = shared_from_this()] { self->accept(); });
}

void TransparentListener::stop() {
  if (protected_) {
    rt_.own.remove(bound_);
    rt_.publish_endpoints();
  }
  // At once on its own thread (see DnsView::stop), else posted there.
  asio::dispatch(worker_.ioc, [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
  });
}

void TransparentListener::accept() {
  accept_with_backoff(rt_, acceptor_, "capture", shared_from_this(), [this](tcp::socket s) {
    if (auto slot = take_client_slot(rt_, s, DoorKind::capture)) hand_over(std::move(s), std::move(*slot));
  });
}

// One acceptor, but the sessions take the io threads in turn, as the other listeners'
// SO_REUSEPORT acceptors spread theirs: on one thread, every captured connection of an
// agent would share one core while its CONNECTs use them all. The socket moves to the
// chosen worker's context on that worker's thread (only it may touch its sockets).
void TransparentListener::hand_over(tcp::socket s, ClientSlot slot) {
  Worker& w = *rt_.workers[next_worker_++ % rt_.workers.size()];
  if (&w == &worker_)
    return std::make_shared<TransparentSession>(rt_, worker_, std::move(s), std::move(slot))->start();
  boost::system::error_code ec;
  const auto protocol = s.local_endpoint(ec).protocol();
  const int fd = ec ? -1 : s.release(ec);
  if (ec || fd < 0) return;  // `s` closes itself; the agent sees the connection reset
  // Shared, since a posted handler is copied; the slot moves into the session once.
  auto held = std::make_shared<ClientSlot>(std::move(slot));
  asio::post(w.ioc, [self = shared_from_this(), &w, protocol, fd, held] {
    tcp::socket moved(w.ioc);
    boost::system::error_code e;
    moved.assign(protocol, fd, e);
    if (e) {
      ::close(fd);
      return;
    }
    std::make_shared<TransparentSession>(self->rt_, w, std::move(moved), std::move(*held))->start();
  });
}

}  // namespace netbox::proxy
