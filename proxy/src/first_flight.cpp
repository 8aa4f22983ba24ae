#include "first_flight.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>

namespace netbox::proxy {

namespace asio = boost::asio;

FirstFlight::Kind sniff_first_flight(std::string_view first) {
  using enum FirstFlight::Kind;
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

std::string fronting(const tls::ClientHello& hello, const std::string& name, std::string_view as) {
  if (hello.status != tls::ClientHello::Status::complete || hello.server_name.empty() ||
      hello.encrypted_client_hello || hello.server_name == name)
    return {};
  return "the TLS server name " + hello.server_name + " is not " + name + ", " + std::string(as) +
         " (domain fronting)";
}

std::optional<Refusal> check_host_headers(const std::vector<std::string_view>& values, const std::string& name) {
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
  if (named != name)
    return Refusal{403, Outcome::deny, {}, "host",
                   "the Host header names " + named + ", not " + name + ", the name this connection was admitted for",
                   {}};
  return std::nullopt;
}

namespace {

struct Reading : std::enable_shared_from_this<Reading> {
  Reading(asio::ip::tcp::socket& s, asio::steady_timer& t, std::chrono::milliseconds timeout, bool agent_first,
          std::function<void(FirstFlight)> then)
      : socket(s), timer(t), header_timeout(timeout), must_send(agent_first), done(std::move(then)) {}

  void read() {
    const bool silent = flight.bytes.empty() && !must_send;
    timer.expires_after(silent ? kClientFirstWait : header_timeout);
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->finished) self->socket.cancel();
    });
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
    if (flight.kind == unknown) return read();
    if (flight.kind == tls) {
      flight.hello = tls::read_client_hello(
          std::span(reinterpret_cast<const std::uint8_t*>(flight.bytes.data()), flight.bytes.size()));
      if (flight.hello.status == tls::ClientHello::Status::need_more && !full) return read();
    } else if (flight.kind == http) {
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
  std::function<void(FirstFlight)> done;
  FirstFlight flight;
  std::array<char, 4096> chunk{};
};

}  // namespace

void read_first_flight(asio::ip::tcp::socket& s, asio::steady_timer& timer, std::chrono::milliseconds header_timeout,
                       bool must_send, std::function<void(FirstFlight)> done) {
  std::make_shared<Reading>(s, timer, header_timeout, must_send, std::move(done))->read();
}

}  // namespace netbox::proxy
