// policy::parse_host on arbitrary bytes, then a decision on what it returned.
// Invariants checked (a violation aborts, so libFuzzer keeps the input):
//  - normalisation is idempotent: a parsed host, parsed again, is the same host;
//  - an IP literal is never returned as a name (neither inet_aton(3) nor inet_pton(3)
//    may read a returned name, or a resolver would treat it as an address);
//  - the policy loader and the request path agree: a name accepted in a request can be
//    written in `allow`, and that entry then allows the request;
//  - every refusal has a message, and so does every deny.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/load.hpp"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using namespace netbox::policy;

// Rules of every kind, so decide_name/decide_address walk all their branches.
const Policy& fixture_policy() {
  static const Policy p = parse_policy(R"({
    "version": 1,
    "allow": ["example.com", "*.example.org", "api.example.net:8443", "203.0.113.0/24",
              "[2001:db8::/32]:443", "xn--bcher-kva.example"],
    "deny": ["*.evil.example.org", "198.51.100.7", "bad.example.com:80"],
    "ports": [80, 443],
    "internal": { "allow": ["127.0.0.1/32", "fd00::/8"] }
  })", "fuzz-fixture.json");
  return p;
}

[[noreturn]] void violated(const char* what, std::string_view raw, const std::string& detail) {
  std::fprintf(stderr, "fuzz_host invariant: %s\n  input: '%.*s'\n  %s\n", what, static_cast<int>(raw.size()),
               raw.data(), detail.c_str());
  std::abort();
}

bool parses_as_address(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  return inet_aton(name.c_str(), &v4) != 0 || inet_pton(AF_INET6, name.c_str(), &v6) == 1;
}

// The same text written as the only allow entry of a policy must allow the request.
void check_policy_agrees(std::string_view raw, const Host& host, std::uint16_t port) {
  if (raw.find_first_of("*:/[]") != std::string_view::npos) return;  // entry syntax, not a host
  const std::string text = nlohmann::json{{"version", 1}, {"allow", {std::string(raw)}}, {"ports", {port}}}.dump();
  Policy p;
  try {
    p = parse_policy(text, "agree.json");
  } catch (const PolicyError& e) {
    violated("a host the request path accepts is refused in allow", raw, e.what());
  }
  const Decision d = decide_name(p.base, host, port);
  if (d.verdict != Verdict::allow) violated("an allow entry does not match its own host", raw, d.reason);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first byte picks the port, so ports are explored together with hosts.
  if (size == 0) return 0;
  static const std::uint16_t kPorts[] = {80, 443, 8443, 22, 1, 65535};
  const std::uint16_t port = kPorts[data[0] % (sizeof kPorts / sizeof kPorts[0])];
  const std::string_view raw(reinterpret_cast<const char*>(data + 1), size - 1);

  const HostParse parsed = parse_host(raw);
  if (!parsed) {
    if (parsed.error.message.empty()) violated("refusal without a message", raw, "");
    return 0;
  }
  const Host& host = *parsed.host;
  if (host.name.empty()) violated("empty name", raw, "");
  if (host.is_ip()) {
    if (host.name != host.ip->to_string()) violated("IP host's name is not its canonical text", raw, host.name);
  } else if (parses_as_address(host.name)) {
    violated("an IP literal came back as a name", raw, host.name);
  }

  const HostParse again = parse_host(host.name);
  if (!again) violated("normalised host does not parse again", raw, host.name + ": " + again.error.message);
  if (again.host->name != host.name || again.host->ip != host.ip)
    violated("normalisation is not idempotent", raw, host.name + " -> " + again.host->name);

  const Profile& profile = fixture_policy().base;
  const Decision d = decide_name(profile, host, port);
  if (d.verdict == Verdict::deny && d.reason.empty()) violated("deny without a reason", raw, host.name);
  if (host.is_ip()) {
    const Decision a = decide_address(profile, host, port, *host.ip);
    if (a.verdict != d.verdict) violated("literal: name and address decisions differ", raw, host.name);
  } else {
    check_policy_agrees(raw, host, port);
    // A name goes on to be resolved: decide it against an allowed, an internal and a
    // denied address, as the proxy does for each address a lookup returns.
    for (const char* addr : {"203.0.113.9", "10.0.0.1", "198.51.100.7", "2001:db8::1", "::ffff:127.0.0.1"}) {
      const Decision a = decide_address(profile, host, port, boost::asio::ip::make_address(addr));
      if (a.verdict == Verdict::deny && a.reason.empty()) violated("address deny without a reason", raw, addr);
    }
  }
  return 0;
}
