// The DNS view's TCP side (RFC 7766), a door like the others: the one accept loop
// (accept_loop.hpp), the agent's client slot (agent_connection.hpp), back pressure before
// each query is read; each query is answered by DnsView::answer, as on UDP.
#include "doors/dns_view.hpp"

#include "pipeline/accept_loop.hpp"
#include "pipeline/agent_connection.hpp"
#include "pipeline/audit_room.hpp"
#include "base/door_services.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace ip = boost::asio::ip;

// One TCP client (RFC 7766): two-byte length, message, answer; until idle or closed.
class DnsView::TcpClient : public std::enable_shared_from_this<TcpClient> {
 public:
  TcpClient(std::shared_ptr<DnsView> view, ip::tcp::socket s, ClientSlot slot)
      : view_(std::move(view)), socket_(std::move(s)), timer_(socket_.get_executor()), slot_(std::move(slot)) {
    boost::system::error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  ~TcpClient() { --view_->tcp_clients_; }

  void start() { read_length(); }

 private:
  void arm() {
    timer_.expires_after(kTcpIdle);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close();
    });
  }
  void close() {
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
  }
  void read_length() {
    // Back pressure, as on every door: a refused query makes a row; none is read while the
    // audit writer is full (the idle timer waits too: the client is not the slow one).
    if (!audit_room_or_wait(*view_->rt_.writer, socket_.get_executor(), [self = shared_from_this()] {
          self->read_length();
        }))
      return;
    arm();
    asio::async_read(socket_, asio::buffer(length_),
                     [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_length(ec); });
  }
  void on_length(boost::system::error_code ec) {
    if (ec) return close();
    const std::size_t n = (std::size_t{length_[0]} << 8) | length_[1];
    if (n == 0 || n > kMaxMessage) return close();  // nothing a query would be
    message_.resize(n);
    asio::async_read(socket_, asio::buffer(message_),
                     [self = shared_from_this()](boost::system::error_code e, std::size_t) { self->on_message(e); });
  }
  void on_message(boost::system::error_code ec) {
    if (ec) return close();
    auto reply = view_->answer(message_, peer_);
    if (reply.empty()) return close();  // a response or a runt: the connection is not a client's
    out_.clear();
    out_.push_back(static_cast<std::uint8_t>(reply.size() >> 8));
    out_.push_back(static_cast<std::uint8_t>(reply.size()));
    out_.insert(out_.end(), reply.begin(), reply.end());
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code e, std::size_t) {
      self->on_written(e);
    });
  }
  void on_written(boost::system::error_code ec) {
    if (ec) return close();
    read_length();
  }

  std::shared_ptr<DnsView> view_;
  ip::tcp::socket socket_;
  asio::steady_timer timer_;
  ClientSlot slot_;  // the agent's connections are counted alike on every door
  std::string peer_;
  std::array<std::uint8_t, 2> length_{};
  std::vector<std::uint8_t> message_;
  std::vector<std::uint8_t> out_;
};

void DnsView::accept() {
  accept_with_backoff(rt_, tcp_, "dns", shared_from_this(), [this](ip::tcp::socket s) {
    // Only the agent itself asks here; anything else on the link is closed at once.
    boost::system::error_code rec;
    const auto peer = s.remote_endpoint(rec);
    if (rec) return;
    if (!from_agent(peer.address())) {
      refuse_foreign(peer.address(), peer.port());
    } else if (tcp_clients_ < kMaxTcpConnections) {
      auto slot = take_client_slot(rt_, s, DoorKind::dns);
      if (!slot) return;
      ++tcp_clients_;
      std::make_shared<TcpClient>(shared_from_this(), std::move(s), std::move(*slot))->start();
    }
  });
}

}  // namespace netbox::proxy
