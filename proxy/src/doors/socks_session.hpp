#pragma once
// One agent connection to the SOCKS5 listener: the handshake (socks_request.hpp) under
// the header timeout from accept, so a client trickling bytes cannot hold it; then the
// requested destination goes through the same Admission as CONNECT (name, addresses,
// netbox's own endpoints, caps) and the same Exchange row, with kind "socks". A host the
// profile inspects goes to the same InspectedTunnel as an inspected CONNECT. Otherwise
// the same dial; then "succeeded", and the agent's first message says what it carries
// (first_flight.hpp): plain HTTP runs the proxy's request loop (http_session.hpp,
// FixedDestination: `rules` and a row for each request); TLS whose server name is another
// host is refused (domain fronting), and so is a blind tunnel to a host some `rules` entry
// names (both reset, the row says why); anything else is the same Tunnel. Refusals before
// "succeeded" are SOCKS replies:
//   denied by the policy or a cap      0x02 connection not allowed by ruleset
//   the name does not resolve          0x04 host unreachable
//   the upstream refuses / times out   0x05 connection refused / 0x06 TTL expired
//   anything else netbox cannot do     0x01 general failure
// and the connection is closed after each.
#include "pipeline/admission.hpp"
#include "pipeline/agent_connection.hpp"
#include "upstream/dialer.hpp"
#include "pipeline/exchange.hpp"
#include "doors/first_flight.hpp"
#include "base/proxy_runtime.hpp"
#include "doors/socks_request.hpp"

#include <boost/beast/core/tcp_stream.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>

namespace netbox::proxy {

class SocksSession : public std::enable_shared_from_this<SocksSession> {
 public:
  SocksSession(ProxyRuntime& impl, Worker& worker, boost::asio::ip::tcp::socket socket, ClientSlot slot);
  ~SocksSession();
  void start();

  // What a refusal answers, by how admission or the dial ended.
  static socks::Reply reply_for(Outcome outcome);
  static socks::Reply reply_for(DialFailure failure);

 private:
  enum class Stage { greeting, credentials, request };

  void read_more();
  void on_read(boost::system::error_code ec, std::size_t bytes);
  void step();
  void consume(std::size_t used);
  void take_request(socks::Request r);
  void admit();
  void act_on(AdmissionResult result);
  void connect_upstream();
  void on_dialed(DialResult r);
  void start_inspection();
  void send_succeeded(std::string early);  // early: bytes the agent sent before the reply
  void on_first_flight(FirstFlight f);
  // Writes two bytes of the handshake, then goes on (step) or closes.
  void send_handshake(std::array<std::uint8_t, 2> bytes, bool then_close);
  // Completes the row (refused, or failed after admission) and answers `code`, then closes.
  void refuse(socks::Reply code, const Refusal& r, std::string error = {});
  void send_reply(socks::Reply code);
  // A client that would be `anonymous` on a proxy with --client-tokens (client_tokens.hpp).
  bool needs_token() const;
  // Its token, the sub-negotiation's password: true when it is now the token's agent (or
  // may stay anonymous); false: refused with a row, the failure status sent, closed.
  bool take_token(const std::string& password);
  void refuse_token(std::string why, std::array<std::uint8_t, 2> answer);
  void close();

  ProxyRuntime& impl_;
  Worker& worker_;
  boost::beast::tcp_stream stream_;
  boost::asio::steady_timer timer_;  // the first flight's waits
  std::chrono::steady_clock::time_point deadline_;  // accept + header_timeout: the whole handshake
  Stage stage_ = Stage::greeting;
  // The longest handshake message is a username/password of 513 bytes.
  std::array<std::uint8_t, 1024> in_{};
  std::size_t have_ = 0;
  std::array<std::uint8_t, 10> out_{};
  AgentConnection conn_;
  policy::Host host_;
  std::uint16_t port_ = 0;
  std::string what_;  // "CONNECT host:port", for the log
  Admission admission_;
  Exchange exchange_;
  std::vector<boost::asio::ip::tcp::endpoint> allowed_;
  policy::Decision decided_;
  std::optional<DialResult> dialled_;  // the upstream, until the first flight says what it carries
};

}  // namespace netbox::proxy
