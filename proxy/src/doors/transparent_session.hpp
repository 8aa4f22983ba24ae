#pragma once
// A captured connection (issue 15 item 2): the agent dialled some address and port, its
// namespace's nftables DNAT sent the connection here instead. The original destination
// (SO_ORIGINAL_DST) is recovered; a synthetic address stands for the name the DNS view
// answered with (held while the connection lives), any other address is an IP literal.
// Then the same Admission and Exchange as CONNECT decide and record it, with kind
// `transparent` (a host some `rules` entry names is refused unless it is inspected), and
// an admitted connection becomes a Tunnel that answers nothing, or, to a host the profile
// inspects on that port, the same InspectedTunnel as an inspected CONNECT.
//
// On any port the agent's first bytes are sniffed before deciding. A TLS ClientHello is
// read whole (and relayed unchanged as the tunnel's first bytes); an SNI naming another
// host than the synthetic address stands for is refused (domain fronting). An HTTP/1.x
// request head is read whole; a Host header naming another host is refused, refusals are
// answered 403 with X-Netbox-Reason, and an admitted connection is handed to the proxy's
// request loop (ClientSession with a FixedDestination): each request decided with `rules`,
// one row each under the connection's. Anything else, or nothing within a short wait (a
// protocol whose server speaks first), is relayed as it comes, decided on the name and
// port; a refusal resets it.
#include "pipeline/admission.hpp"
#include "pipeline/agent_connection.hpp"
#include "upstream/dialer.hpp"
#include "doors/dns_view.hpp"
#include "pipeline/exchange.hpp"
#include "doors/first_flight.hpp"
#include "base/proxy_runtime.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace netbox::proxy {

class TransparentSession : public std::enable_shared_from_this<TransparentSession> {
 public:
  TransparentSession(ProxyRuntime& rt, Worker& w, boost::asio::ip::tcp::socket s, ClientSlot slot);
  ~TransparentSession();
  void start();

 private:
  void take_destination();
  void judge_first_flight(FirstFlight f);
  void admit();
  void act_on(AdmissionResult result);
  void on_dialed(DialResult r);
  void start_inspection();
  void go_on();  // the row is open: on to the upstream, the inspector or the request loop
  void start_requests();
  void refuse(const Refusal& r, std::string error = {});
  void reset();

  ProxyRuntime& rt_;
  Worker& worker_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::steady_timer timer_;
  AgentConnection conn_;
  Admission admission_;
  Exchange exchange_;
  std::shared_ptr<DnsView> view_;
  std::optional<boost::asio::ip::address> held_;  // the synthetic address held in view_
  boost::asio::ip::tcp::endpoint original_;
  std::string name_;  // what a synthetic address stands for; empty: an IP literal
  policy::Host host_;
  std::vector<boost::asio::ip::tcp::endpoint> allowed_;
  using Flight = FirstFlight::Kind;  // what the first bytes are (on any port): read before deciding
  Flight flight_ = Flight::unknown;
  bool inspected_ = false;  // the profile inspects host_ on this port: TLS is terminated here
  policy::Decision decided_;
  std::string early_;  // the first flight, relayed first once admitted
  std::shared_ptr<std::string> answer_;  // a 403 being written
};

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
