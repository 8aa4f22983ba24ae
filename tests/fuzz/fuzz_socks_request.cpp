// The SOCKS5 handshake (socks_request.hpp) on arbitrary bytes, read the way the session
// reads an agent's connection: greeting, then username/password if chosen, then the
// request. Invariants (a violation aborts):
//  - nothing reads past what it was given, and a complete message uses at least one byte;
//  - every strict prefix of a complete or refused message needs more, or is refused at
//    the same point (no answer depends on bytes not yet read);
//  - a complete greeting chose no-auth or username/password, and only if offered;
//  - a complete request is a CONNECT with a non-empty host; an IPv4/IPv6 host is an address;
//  - a refused request answers 0x01, 0x07 or 0x08 and says why.
#include "fuzz_invariant.hpp"
#include "doors/socks_request.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

using namespace netbox::proxy::socks;

using netbox::fuzz::check;

template <typename Read>
void check_prefixes(std::span<const std::uint8_t> in, std::size_t used, Read read) {
  for (std::size_t n = 0; n < used; ++n) {
    const auto r = read(in.first(n));
    check(r.status != Status::complete, "a prefix of a message is complete");
  }
}

std::span<const std::uint8_t> check_request(std::span<const std::uint8_t> in) {
  const auto r = read_request(in);
  check(r.used <= in.size(), "a request read past its input");
  if (r.status == Status::need_more) return {};
  if (r.status == Status::refused) {
    check(r.reply == Reply::general_failure || r.reply == Reply::command_not_supported ||
              r.reply == Reply::address_type_not_supported,
          "a refusal with a code the parser does not give");
    check(!r.problem.empty(), "a refusal without a reason");
    return {};
  }
  check(r.used >= 7, "a complete request shorter than its smallest form");
  check(r.command == static_cast<std::uint8_t>(Command::connect), "a complete request that is not CONNECT");
  check(!r.host.empty(), "a complete request without a host");
  if (r.type != AddressType::domain) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(r.host, ec);
    check(!ec, "an IP address type whose host is not an address");
  }
  check_prefixes(in, r.used, [](std::span<const std::uint8_t> p) { return read_request(p); });
  return in.subspan(r.used);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  check_request(in);  // a request on its own, as a fuzzer's shortest way to the address parsing

  const auto g = read_greeting(in);
  check(g.used <= in.size(), "a greeting read past its input");
  if (g.status != Status::complete) return 0;
  check(g.method == Method::no_auth || g.method == Method::password, "a method netbox does not speak");
  bool offered = false;
  for (std::size_t i = 2; i < g.used; ++i) offered = offered || in[i] == static_cast<std::uint8_t>(g.method);
  check(offered, "a method the client did not offer");
  check_prefixes(in, g.used, [](std::span<const std::uint8_t> p) { return read_greeting(p); });
  in = in.subspan(g.used);
  if (g.method == Method::password) {
    const auto c = read_credentials(in);
    check(c.used <= in.size(), "credentials read past their input");
    if (c.status != Status::complete) return 0;
    check(c.username.size() <= 255, "a username longer than its length byte allows");
    check_prefixes(in, c.used, [](std::span<const std::uint8_t> p) { return read_credentials(p); });
    in = in.subspan(c.used);
  }
  check_request(in);
  return 0;
}
