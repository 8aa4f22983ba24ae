#include "doors/first_flight.hpp"

#include "pipeline/policy_answer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>

namespace netbox::proxy {

namespace asio = boost::asio;

namespace {

// HTTP/1.1 lets a server ignore empty lines before a request line (RFC 9112 2.2), and
// servers do: they are skipped here too, or "\r\nGET" would pass for another protocol.
std::size_t leading_line_ends(std::string_view bytes) {
  const auto at = bytes.find_first_not_of("\r\n");
  return at == std::string_view::npos ? bytes.size() : at;
}

// The Host headers' values in a request head, as sent.
std::vector<std::string_view> host_values(std::string_view head) {
  std::vector<std::string_view> hosts;
  std::size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string_view::npos) {
    at += 2;
    if (head.size() - at < 5) break;
    std::string name(head.substr(at, 5));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "host:") continue;
    const auto end = head.find("\r\n", at);
    hosts.push_back(head.substr(at + 5, end - at - 5));
  }
  return hosts;
}

}  // namespace

FirstFlight::Kind sniff_first_flight(std::string_view first) {
  using enum FirstFlight::Kind;
  first.remove_prefix(leading_line_ends(first));
  if (first.empty()) return unknown;
  if (first.front() == 0x16) return tls;  // a TLS handshake record
  constexpr std::size_t kLongestMethod = 16;
  for (std::size_t i = 0; i < first.size() && i <= kLongestMethod; ++i) {
    const char c = first[i];
    if (c == ' ') return i > 0 ? http : raw;
    if (!std::isupper(static_cast<unsigned char>(c)) && c != '-') return raw;
  }
  return first.size() > kLongestMethod ? raw : unknown;
}

std::optional<Refusal> check_first_flight(const FirstFlight& f, const policy::Host& host, std::string_view as) {
  using enum FirstFlight::Kind;
  if (f.kind == http) {
    const auto end = f.bytes.find("\r\n\r\n");
    if (!f.head_complete || end == std::string::npos)
      return Refusal{431, Outcome::error, {}, "request", "the request head is longer than 16 KiB", {}};
    // The target must be a path: a server takes the authority of an absolute-form target
    // over the Host header (RFC 9112, 3.2.2), so "GET http://evil/" with the right Host would
    // front through a tunnel admitted for another name (found by a review of issue 22).
    const std::string_view line = std::string_view(f.bytes).substr(leading_line_ends(f.bytes));
    const auto sp = line.find(' ');
    const bool absolute =
        sp != std::string_view::npos && sp + 1 < line.size() && line[sp + 1] != '/' && line.substr(sp + 1, 2) != "* ";
    if (absolute) return refusal_of(policy::check_request_host(host, true, {}), 403);
    // Only a name is checked: a literal has no other name to disagree with.
    if (host.is_ip()) return std::nullopt;
    return check_host_headers(host_values(std::string_view(f.bytes).substr(0, end + 2)), host);
  }
  if (f.kind != tls) return std::nullopt;
  const auto name = policy::check_server_name(host, false, server_name_asked(f.hello), policy::TlsEnd::upstream, as);
  if (name.lets_through()) return std::nullopt;
  return refusal_of(name, 403);
}

std::optional<Refusal> check_host_headers(const std::vector<std::string_view>& values, const policy::Host& host) {
  const std::string& name = host.name;
  std::string named;
  if (values.size() == 1) {
    std::string_view v = values.front();
    v.remove_prefix(std::min(v.size(), v.find_first_not_of(" \t")));
    v = v.substr(0, v.find_last_not_of(" \t") + 1);
    if (!v.empty() && v.front() != '[') v = v.substr(0, v.find(':'));
    if (!v.empty() && v.back() == '.') v.remove_suffix(1);
    for (char c : v) named.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (named.empty())
    return Refusal{400, Outcome::error, {}, "host", "the request must have exactly one Host header, naming " + name, {}};
  const auto d = policy::check_request_host(host, false, named);
  if (d.lets_through()) return std::nullopt;
  return refusal_of(d, 403);
}

namespace {

struct Reading : std::enable_shared_from_this<Reading> {
  Reading(asio::ip::tcp::socket& s, asio::steady_timer& t, std::chrono::milliseconds timeout, bool agent_first,
          std::function<void(FirstFlight)> then)
      : socket(s), timer(t), header_timeout(timeout), must_send(agent_first), done(std::move(then)) {}

  // Bytes the agent sent before its destination was answered (SOCKS optimistic data, a
  // hello pipelined after CONNECT) are judged like any first message.
  void begin() {
    if (flight.bytes.empty()) return read();
    judge();
  }

  // The timer is set for the first byte, then once more when it is in: from then on the
  // whole message has header_timeout, however its bytes are spaced (re-arming it at each
  // piece would let a byte every header_timeout - 1 ms hold the connection for hours).
  void read() {
    const bool first_byte = flight.bytes.empty();
    if (first_byte || !message_timed) {
      message_timed = !first_byte;
      timer.expires_after(first_byte && !must_send ? kClientFirstWait : header_timeout);
      timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec && !self->finished) self->socket.cancel();
      });
    }
    socket.async_read_some(asio::buffer(chunk), [self = shared_from_this()](boost::system::error_code ec,
                                                                            std::size_t n) {
      self->on_bytes(ec, n);
    });
  }

  void on_bytes(boost::system::error_code ec, std::size_t n) {
    if (ec) {
      timer.cancel();
      // Silent, or closed its sending side at once: the server speaks first.
      if (flight.bytes.empty() && !must_send && (ec == asio::error::operation_aborted || ec == asio::error::eof)) {
        flight.kind = FirstFlight::Kind::raw;
        return finish();
      }
      flight.error = ec == asio::error::operation_aborted ? "the connection sent no complete first message in time"
                                                          : "the connection ended before its first message was "
                                                            "complete (" + ec.message() + ")";
      return finish();
    }
    flight.bytes.append(chunk.data(), n);
    judge();
  }

  void judge() {
    using enum FirstFlight::Kind;
    const bool full = flight.bytes.size() >= tls::kMaxHelloBytes;
    if (flight.kind == unknown) flight.kind = sniff_first_flight(flight.bytes);
    if (flight.kind == unknown && full) {
      flight.error = "the connection sent " + std::to_string(flight.bytes.size()) + " bytes that start no message";
      return finish();
    }
    if (flight.kind == unknown) return read();
    if (flight.kind == tls) {
      flight.hello = tls::read_client_hello(
          std::span(reinterpret_cast<const std::uint8_t*>(flight.bytes.data()), flight.bytes.size()));
      if (flight.hello.status == tls::ClientHello::Status::need_more && !full) return read();
    } else if (flight.kind == http) {
      flight.bytes.erase(0, leading_line_ends(flight.bytes));  // no reader downstream needs them
      flight.head_complete = flight.bytes.find("\r\n\r\n") != std::string::npos;
      if (!flight.head_complete && !full) return read();
    }
    timer.cancel();
    finish();
  }

  void finish() {
    finished = true;  // the socket may move on now: a late timer must not touch it
    auto d = std::move(done);
    d(std::move(flight));
  }

  asio::ip::tcp::socket& socket;
  asio::steady_timer& timer;
  std::chrono::milliseconds header_timeout;
  bool must_send;
  bool finished = false;
  bool message_timed = false;  // the whole message's deadline is set (from its first byte)
  std::function<void(FirstFlight)> done;
  FirstFlight flight;
  std::array<char, 4096> chunk{};
};

}  // namespace

void read_first_flight(asio::ip::tcp::socket& s, asio::steady_timer& timer, std::chrono::milliseconds header_timeout,
                       bool must_send, std::function<void(FirstFlight)> done, std::string already) {
  auto r = std::make_shared<Reading>(s, timer, header_timeout, must_send, std::move(done));
  r->flight.bytes = std::move(already);
  r->begin();
}

}  // namespace netbox::proxy
