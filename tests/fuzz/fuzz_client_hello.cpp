// tls::read_client_hello on arbitrary bytes, as a hostile agent's first flight would be.
// Invariants checked (a violation aborts, so libFuzzer keeps the input):
//  - a complete hello's `bytes` lies within the input, and reading exactly those bytes
//    gives the same answer (what the proxy peeked is what it decided on);
//  - a server name holds only lower-case host-name bytes, at most 253 of them;
//  - every prefix of a complete hello asks for more, never for a verdict;
//  - a malformed answer always says why.
#include "fuzz_invariant.hpp"
#include "netbox/tls/client_hello.hpp"

#include <cstdio>
#include <cstdlib>

using netbox::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using netbox::tls::ClientHello;
  std::span<const std::uint8_t> in(data, size);
  ClientHello h = netbox::tls::read_client_hello(in);
  if (h.status == ClientHello::Status::malformed) check(!h.reason.empty(), "a malformed hello without a reason");
  if (h.status != ClientHello::Status::complete) return 0;
  check(h.bytes > 0 && h.bytes <= size, "bytes outside the input");
  check(h.server_name.size() <= 253, "server name longer than 253");
  for (char c : h.server_name)
    check((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.',
          "a byte no host name has in the server name");
  ClientHello again = netbox::tls::read_client_hello(in.first(h.bytes));
  check(again.status == ClientHello::Status::complete && again.server_name == h.server_name &&
            again.alpn == h.alpn && again.bytes == h.bytes,
        "the peeked bytes alone decide differently");
  // Prefixes: a few cut points, not all (that would be quadratic on long inputs).
  for (std::size_t cut : {h.bytes - 1, h.bytes / 2, std::size_t{4}, std::size_t{1}}) {
    if (cut >= h.bytes) continue;
    check(netbox::tls::read_client_hello(in.first(cut)).status == ClientHello::Status::need_more,
          "a prefix of a complete hello was given a verdict");
  }
  return 0;
}
