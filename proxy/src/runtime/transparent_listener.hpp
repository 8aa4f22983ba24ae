#pragma once
// The agent's transparent listener: on its host address, a port of its own that the
// namespace's DNAT rule sends every captured connection to (transparent_session.hpp).
#include "base/proxy_runtime.hpp"
#include "pipeline/client_slots.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <memory>

namespace netbox::proxy {

// The agent's transparent listener: on its host address, a port of its own that the
// namespace's DNAT rule sends every captured connection to. One acceptor, on one io thread;
// its sessions take the io threads in turn (hand_over).
class TransparentListener : public std::enable_shared_from_this<TransparentListener> {
 public:
  // Port 0 picks one. Throws naming the address.
  TransparentListener(ProxyRuntime& rt, Worker& w, const boost::asio::ip::address& host, unsigned short port = 0);
  // On a listening socket made in the agent's namespace (AgentSockets::capture), taken
  // over (closed with the listener). Not protected as a destination: nothing outside that
  // namespace reaches it. Throws when `fd` is no listening TCP socket.
  TransparentListener(ProxyRuntime& rt, Worker& w, int fd);
  const boost::asio::ip::tcp::endpoint& endpoint() const { return bound_; }
  void start();
  void stop();

 private:
  void accept();
  void hand_over(boost::asio::ip::tcp::socket s, ClientSlot slot);
  ProxyRuntime& rt_;
  Worker& worker_;
  std::size_t next_worker_ = 0;  // touched on worker_'s thread only
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint bound_;
  bool protected_ = false;  // bound_ is among the proxy's own endpoints
};

}  // namespace netbox::proxy
