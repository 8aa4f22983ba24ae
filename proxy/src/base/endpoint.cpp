#include "netbox/proxy/endpoint.hpp"

#include "netbox/audit/printable.hpp"

#include "pipeline/target.hpp"

#include <charconv>

namespace netbox::proxy {

namespace {

constexpr std::string_view kExpected = " (expected ADDR:PORT, e.g. 127.0.0.1:3128 or [::1]:3128)";

std::invalid_argument bad(std::string_view text, const std::string& why) {
  return std::invalid_argument("'" + audit::escape_controls(text) + "': " + why + std::string(kExpected));
}

std::string quoted(std::string_view part) { return "'" + audit::escape_controls(part) + "'"; }

}  // namespace

boost::asio::ip::tcp::endpoint parse_endpoint(std::string_view text, PortZero zero) {
  // make_address reads a C string: a NUL inside would cut the address short unseen.
  if (text.find('\0') != std::string_view::npos) throw bad(text, "holds a NUL byte");
  std::string_view host, port;
  const bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) throw bad(text, "no ']' after the '['");
    host = text.substr(1, close - 1);
    const auto rest = text.substr(close + 1);
    if (rest.empty()) throw bad(text, "no port");
    if (rest.front() != ':') throw bad(text, "text between ']' and the port");
    port = rest.substr(1);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) throw bad(text, "no port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) throw bad(text, "IPv6 addresses go in brackets");
  }
  if (host.empty()) throw bad(text, "no address");
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) throw bad(text, quoted(host) + " is not an IP address");
  if (bracketed && !addr.is_v6()) throw bad(text, "brackets hold an IPv6 address, not " + quoted(host));
  unsigned value = 0;
  const auto [end, err] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || port.size() > 5 || err != std::errc() || end != port.data() + port.size() || value > 65535)
    throw bad(text, quoted(port) + " is not a port number (0-65535)");
  if (value == 0 && zero == PortZero::refused) throw bad(text, "port 0 names no port to send to");
  return {addr, static_cast<unsigned short>(value)};
}

std::string endpoint_text(const boost::asio::ip::tcp::endpoint& ep) {
  return authority(address_text(ep.address()), ep.port());
}

std::string address_text(const boost::asio::ip::address& addr) {
  if (!addr.is_v4()) return addr.to_string();
  const auto bytes = addr.to_v4().to_bytes();
  char text[16];
  char* at = text;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i) *at++ = '.';
    at = std::to_chars(at, text + sizeof text, bytes[i]).ptr;
  }
  return std::string(text, static_cast<std::size_t>(at - text));
}

}  // namespace netbox::proxy
