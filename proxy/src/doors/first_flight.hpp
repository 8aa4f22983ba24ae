#pragma once
// The first message of a connection whose protocol netbox is not told (a captured
// connection, a SOCKS5 CONNECT once answered): read before anything is relayed, on any
// port, and recognised by its first bytes. A TLS handshake record is read until its
// ClientHello is complete (16 KiB at most); an HTTP/1.x request line (a method token,
// then a space, after any empty lines) until the end of its head (16 KiB at most);
// anything else is taken as it is. A connection that stays silent for kClientFirstWait is a protocol whose server
// speaks first (SMTP, MySQL, FTP): it is relayed as it comes, since waiting longer would
// only delay the server's greeting; TLS and HTTP clients send at once. Except on ports 80
// and 443, and to a host netbox inspects: there the agent must speak first, within the
// header timeout, so that a client pausing on purpose cannot get its TLS or HTTP past the
// server-name and Host checks as a "silent" protocol. Once the first byte is in, the
// whole message must follow within the header timeout.
#include "netbox/policy/host.hpp"
#include "netbox/tls/client_hello.hpp"

#include "pipeline/denial.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

inline constexpr std::chrono::milliseconds kClientFirstWait{300};

struct FirstFlight {
  enum class Kind { unknown, tls, http, raw };
  Kind kind = Kind::unknown;
  std::string bytes;       // all that was read: it goes first, unchanged
  tls::ClientHello hello;  // tls: as far as it could be read
  std::string error;       // the agent stalled or went away in the middle of the message
  bool head_complete = false;  // http: bytes holds a whole head
};

FirstFlight::Kind sniff_first_flight(std::string_view first);

// Whether a connection to `port` must open with the agent's message (see above).
inline bool agent_must_speak_first(std::uint16_t port, bool inspected) {
  return inspected || port == 80 || port == 443;
}

// The Host check of a plain-HTTP request on a connection whose destination is a name:
// exactly one Host header (`values`, as sent; otherwise 400), naming the host: read
// lower-case, without a port or a final dot, for policy::check_request_host (403, rule
// `host`, for another name).
std::optional<Refusal> check_host_headers(const std::vector<std::string_view>& values, const policy::Host& host);

// The fronting check every door runs on the first message of a connection admitted for
// `host` (`as` says what the name is to the agent): a TLS hello goes to the policy's
// check_server_name (it must be readable and ask for `host` or no name); a plain-HTTP head must be whole and its one Host header
// name `host` (check_host_headers). A literal host is checked for a whole head only.
// nullopt: the connection may go on.
std::optional<Refusal> check_first_flight(const FirstFlight& f, const policy::Host& host, std::string_view as);

// Reads `s`'s first message and calls `done` once (on the socket's executor). `must_send`:
// the agent must speak first (agent_must_speak_first), so silence is waited out for the
// whole header timeout and is an error. `timer` is the caller's, idle meanwhile.
// `already`: bytes of it read before (they are judged first; with enough, nothing is read).
// Empty lines before an HTTP request line are skipped (and dropped from `bytes`).
void read_first_flight(boost::asio::ip::tcp::socket& s, boost::asio::steady_timer& timer,
                       std::chrono::milliseconds header_timeout, bool must_send,
                       std::function<void(FirstFlight)> done, std::string already = {});

}  // namespace netbox::proxy
