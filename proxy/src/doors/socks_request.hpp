#pragma once
// The SOCKS5 handshake (RFC 1928) and its username/password sub-negotiation (RFC 1929)
// as pure functions over the bytes received so far: each says whether it needs more,
// how many bytes it used, and what it read or which reply code refuses it. No I/O, so it
// is unit-tested byte by byte and fuzzed (tests/fuzz/fuzz_socks_request.cpp); the session
// that feeds it is socks_session.*.
//
// Supported: version 5; methods "no authentication" (0x00) and username/password (0x02),
// whose password is a client token where the proxy asks for one (client_tokens.hpp) and
// is otherwise read and never checked (a launched agent is known by its socket); the
// CONNECT command; address types IPv4, domain name and IPv6. Refused: BIND and UDP
// ASSOCIATE (and any other command) with 0x07, an unknown address type with 0x08, and a
// malformed request with 0x01.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace netbox::proxy::socks {

inline constexpr std::uint8_t kVersion = 5;
inline constexpr std::uint8_t kPasswordVersion = 1;  // RFC 1929's sub-negotiation

enum class Method : std::uint8_t { no_auth = 0x00, password = 0x02, none_acceptable = 0xff };

// RFC 1928 section 6, the REP field.
enum class Reply : std::uint8_t {
  succeeded = 0x00,
  general_failure = 0x01,
  not_allowed = 0x02,  // "connection not allowed by ruleset"
  network_unreachable = 0x03,
  host_unreachable = 0x04,
  connection_refused = 0x05,
  ttl_expired = 0x06,
  command_not_supported = 0x07,
  address_type_not_supported = 0x08,
};

enum class Command : std::uint8_t { connect = 0x01, bind = 0x02, udp_associate = 0x03 };
enum class AddressType : std::uint8_t { ipv4 = 0x01, domain = 0x03, ipv6 = 0x04 };

enum class Status {
  need_more,  // every byte so far is well formed: read more and call again
  complete,   // `used` bytes make the message
  refused,    // answer `reply` (or, for a greeting, the method or nothing) and close
};

struct Greeting {
  Status status = Status::need_more;
  std::size_t used = 0;
  // complete: the method chosen (no_auth when offered, else password); refused: none_acceptable
  // (answered), or `silent` when the bytes are not SOCKS5 at all (nothing to answer).
  Method method = Method::none_acceptable;
  bool password_offered = false;  // complete: username/password was among the methods offered
  bool silent = false;
  std::string problem;  // refused: why, for the log
};

struct Credentials {
  Status status = Status::need_more;
  std::size_t used = 0;
  std::string username;  // may be empty; never checked
  std::string password;  // a client token where one is asked for; never logged or recorded
  std::string problem;
};

struct Request {
  Status status = Status::need_more;
  std::size_t used = 0;
  Reply reply = Reply::succeeded;  // refused: the code to answer
  std::uint8_t command = 0;        // as sent, for the audit row of a refused command
  AddressType type = AddressType::ipv4;
  std::string host;  // the domain name as sent (any bytes), or the address's text form
  std::uint16_t port = 0;
  std::string problem;
};

Greeting read_greeting(std::span<const std::uint8_t> in);
Credentials read_credentials(std::span<const std::uint8_t> in);
Request read_request(std::span<const std::uint8_t> in);

// The server's two-byte method selection, RFC 1929's two-byte status (0 is success),
// and a reply with BND.ADDR 0.0.0.0:0 (netbox does not tell the agent where it dialled from).
constexpr std::array<std::uint8_t, 2> method_selection(Method m) { return {kVersion, static_cast<std::uint8_t>(m)}; }
constexpr std::array<std::uint8_t, 2> credentials_status(bool ok) {
  return {kPasswordVersion, static_cast<std::uint8_t>(ok ? 0 : 1)};
}
constexpr std::array<std::uint8_t, 10> reply(Reply code) {
  return {kVersion, static_cast<std::uint8_t>(code), 0, static_cast<std::uint8_t>(AddressType::ipv4), 0, 0, 0, 0, 0, 0};
}

// The command's name for the audit row's method ("CONNECT", "BIND", "UDP ASSOCIATE", or
// the number).
std::string command_name(std::uint8_t command);

}  // namespace netbox::proxy::socks
