#pragma once
// A captured connection (issue 15 item 2), the capture adapter: the agent dialled some
// address and port, its namespace's nftables DNAT sent the connection here instead. The
// original destination (SO_ORIGINAL_DST) is recovered; a synthetic address stands for the
// name the DNS view answered with (held while the connection is decided), any other
// address is an IP literal. On any port the agent's first bytes are read before deciding
// (first_flight.hpp): a TLS ClientHello whole (relayed unchanged as the tunnel's first
// bytes), an HTTP/1.x request head whole; anything else, or nothing within a short wait (a
// protocol whose server speaks first), is relayed as it comes, decided on the name and port.
//
// Then the step every door shares (pipeline/target_step.hpp) decides and records it with
// kind `transparent`: an SNI or Host header naming another host than the address was
// looked up as is refused (domain fronting), as is a blind tunnel to a host some `rules`
// entry names; plain HTTP goes to the proxy's request loop (each request decided with
// `rules`, one row each under the connection's), a host the profile inspects to the same
// InspectedTunnel as an inspected CONNECT, anything else to a Tunnel that answers nothing.
// What the capture door supplies is how it answers: a refusal of plain HTTP is a 403 with
// X-Netbox-Reason, any other a reset.
#include "base/door_services.hpp"
#include "doors/first_flight.hpp"
#include "pipeline/agent_connection.hpp"
#include "pipeline/exchange.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <string>

namespace netbox::proxy {

class TransparentSession : public std::enable_shared_from_this<TransparentSession> {
 public:
  TransparentSession(DoorServices& rt, Worker& w, boost::asio::ip::tcp::socket s, ClientSlot slot);
  ~TransparentSession();
  void start();

 private:
  void take_destination();
  void hand_over(FirstFlight f);  // on to the step every door shares (target_step.hpp)
  void refuse(const Refusal& r);  // before the first flight: the row, and a reset

  DoorServices& rt_;
  Worker& worker_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::steady_timer timer_;
  AgentConnection conn_;
  Exchange exchange_;
  std::shared_ptr<void> held_;  // the synthetic address held in the agent's DNS view
  std::string name_;  // what a synthetic address stands for; empty: an IP literal
  policy::Host host_;
  std::uint16_t port_ = 0;
};


}  // namespace netbox::proxy
