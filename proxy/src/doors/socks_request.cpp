#include "doors/socks_request.hpp"

#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>

namespace netbox::proxy::socks {

Greeting read_greeting(std::span<const std::uint8_t> in) {
  Greeting g;
  if (in.empty()) return g;
  if (in[0] != kVersion) {
    // SOCKS4, HTTP, TLS: nothing a SOCKS5 answer would mean anything to.
    g.status = Status::refused;
    g.silent = true;
    g.problem = "not a SOCKS5 greeting (version byte " + std::to_string(in[0]) + ")";
    return g;
  }
  if (in.size() < 2) return g;
  const std::size_t n = in[1];
  if (n == 0) {
    g.status = Status::refused;
    g.problem = "a SOCKS5 greeting offering no authentication method";
    return g;
  }
  if (in.size() < 2 + n) return g;
  bool no_auth = false, password = false;
  for (std::size_t i = 0; i < n; ++i) {
    no_auth = no_auth || in[2 + i] == static_cast<std::uint8_t>(Method::no_auth);
    password = password || in[2 + i] == static_cast<std::uint8_t>(Method::password);
  }
  g.used = 2 + n;
  if (!no_auth && !password) {
    g.status = Status::refused;
    g.problem = "the client offered neither \"no authentication\" nor username/password";
    return g;
  }
  g.status = Status::complete;
  g.method = no_auth ? Method::no_auth : Method::password;
  g.password_offered = password;
  return g;
}

Credentials read_credentials(std::span<const std::uint8_t> in) {
  Credentials c;
  if (in.empty()) return c;
  if (in[0] != kPasswordVersion) {
    c.status = Status::refused;
    c.problem = "username/password sub-negotiation version " + std::to_string(in[0]) + ", not 1";
    return c;
  }
  if (in.size() < 2) return c;
  const std::size_t ulen = in[1];
  if (in.size() < 2 + ulen + 1) return c;
  const std::size_t plen = in[2 + ulen];
  if (in.size() < 3 + ulen + plen) return c;
  c.status = Status::complete;
  c.used = 3 + ulen + plen;
  c.username.assign(reinterpret_cast<const char*>(in.data() + 2), ulen);
  c.password.assign(reinterpret_cast<const char*>(in.data() + 3 + ulen), plen);
  return c;
}

Request read_request(std::span<const std::uint8_t> in) {
  Request r;
  auto refuse = [&r](Reply code, std::string why) {
    r.status = Status::refused;
    r.reply = code;
    r.problem = std::move(why);
    return r;
  };
  if (in.empty()) return r;
  if (in[0] != kVersion) return refuse(Reply::general_failure, "request version " + std::to_string(in[0]) + ", not 5");
  if (in.size() < 4) return r;
  r.command = in[1];
  if (in[2] != 0) return refuse(Reply::general_failure, "the reserved byte is " + std::to_string(in[2]) + ", not 0");
  std::size_t addr_len = 0;
  std::size_t at = 4;
  switch (in[3]) {
    case static_cast<std::uint8_t>(AddressType::ipv4): addr_len = 4; break;
    case static_cast<std::uint8_t>(AddressType::ipv6): addr_len = 16; break;
    case static_cast<std::uint8_t>(AddressType::domain):
      if (in.size() < 5) return r;
      addr_len = in[4];
      at = 5;
      if (addr_len == 0) return refuse(Reply::general_failure, "an empty domain name");
      break;
    default:
      return refuse(Reply::address_type_not_supported, "address type " + std::to_string(in[3]));
  }
  r.type = static_cast<AddressType>(in[3]);
  if (in.size() < at + addr_len + 2) return r;
  const auto* a = in.data() + at;
  if (r.type == AddressType::ipv4) {
    boost::asio::ip::address_v4::bytes_type b;
    std::copy(a, a + 4, b.begin());
    r.host = boost::asio::ip::address_v4(b).to_string();
  } else if (r.type == AddressType::ipv6) {
    boost::asio::ip::address_v6::bytes_type b;
    std::copy(a, a + 16, b.begin());
    r.host = boost::asio::ip::address_v6(b).to_string();
  } else {
    r.host.assign(reinterpret_cast<const char*>(a), addr_len);
  }
  r.port = static_cast<std::uint16_t>(in[at + addr_len] << 8 | in[at + addr_len + 1]);
  r.used = at + addr_len + 2;
  if (r.command != static_cast<std::uint8_t>(Command::connect)) {
    refuse(Reply::command_not_supported, "netbox supports only CONNECT, not " + command_name(r.command));
    return r;
  }
  r.status = Status::complete;
  return r;
}

std::string command_name(std::uint8_t command) {
  switch (command) {
    case static_cast<std::uint8_t>(Command::connect): return "CONNECT";
    case static_cast<std::uint8_t>(Command::bind): return "BIND";
    case static_cast<std::uint8_t>(Command::udp_associate): return "UDP ASSOCIATE";
  }
  return "command " + std::to_string(command);
}

}  // namespace netbox::proxy::socks
