#pragma once
// One agent connection to the SOCKS5 listener, the SOCKS5 adapter: the handshake
// (socks_request.hpp) under the header timeout from accept, so a client trickling bytes
// cannot hold it, a client token as its password where one is asked for; then the
// requested destination goes to the step every door shares (pipeline/target_step.hpp):
// the same Admission as CONNECT, the same Exchange row with kind "socks", then the same
// InspectedTunnel, request loop (plain HTTP, each request decided with `rules`) or
// Tunnel, after "succeeded"; TLS naming another host (domain fronting) and a blind tunnel
// to a host some `rules` entry names are reset there, the row saying why. What SOCKS5
// supplies is how it answers; refusals before "succeeded" are SOCKS replies:
//   denied by the policy or a cap      0x02 connection not allowed by ruleset
//   the name does not resolve          0x04 host unreachable
//   the upstream refuses / times out   0x05 connection refused / 0x06 TTL expired
//   anything else netbox cannot do     0x01 general failure
// and the connection is closed after each.
#include "base/door_services.hpp"
#include "doors/socks_request.hpp"
#include "pipeline/admission.hpp"
#include "pipeline/agent_connection.hpp"
#include "pipeline/exchange.hpp"
#include "upstream/dialer.hpp"

#include <boost/beast/core/tcp_stream.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>

namespace netbox::proxy {

class SocksSession : public std::enable_shared_from_this<SocksSession> {
 public:
  SocksSession(DoorServices& impl, Worker& worker, boost::asio::ip::tcp::socket socket, ClientSlot slot);
  ~SocksSession();
  void start();

 private:
  enum class Stage { greeting, credentials, request };

  void read_more();
  void on_read(boost::system::error_code ec, std::size_t bytes);
  void step();
  void consume(std::size_t used);
  void take_request(socks::Request r);
  // Writes two bytes of the handshake, then goes on (step) or closes.
  void send_handshake(std::array<std::uint8_t, 2> bytes, bool then_close);
  // Completes the row (refused before admission) and answers `code`, then closes.
  void refuse(socks::Reply code, const Refusal& r, std::string error = {});
  // A client that would be `anonymous` on a proxy with --client-tokens (client_tokens.hpp).
  bool needs_token() const;
  // Its token, the sub-negotiation's password: true when it is now the token's agent (or
  // may stay anonymous); false: refused with a row, the failure status sent, closed.
  bool take_token(const std::string& password);
  void refuse_token(std::string why, std::array<std::uint8_t, 2> answer);
  void close();

  DoorServices& impl_;
  Worker& worker_;
  boost::beast::tcp_stream stream_;
  std::chrono::steady_clock::time_point deadline_;  // accept + header_timeout: the whole handshake
  Stage stage_ = Stage::greeting;
  // The longest handshake message is a username/password of 513 bytes.
  std::array<std::uint8_t, 1024> in_{};
  std::size_t have_ = 0;
  std::array<std::uint8_t, 10> out_{};
  AgentConnection conn_;
  Exchange exchange_;
};

}  // namespace netbox::proxy
