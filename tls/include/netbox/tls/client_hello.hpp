#pragma once
// Reading a TLS ClientHello from the bytes an agent sent, without consuming them: the
// proxy peeks (MSG_PEEK or its read buffer), learns the SNI, ALPN and whether the hello
// hides its real name (ECH), decides, and only then terminates or relays the stream
// untouched. Used wherever a TLS stream is decided on its first flight: an inspected
// CONNECT (SNI must equal the CONNECT host) and transparent capture (SNI against the
// name a synthetic address stands for).
//
// Pure and bounded: no allocation beyond the result, at most kMaxHelloBytes examined, so
// it is fuzzed directly (tests/fuzz/fuzz_client_hello.cpp).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netbox::tls {

// A ClientHello may span several records (post-quantum key shares make it ~1.8 KB, with
// ECH more); a hello this long is no client's.
inline constexpr std::size_t kMaxHelloBytes = 16 * 1024;

struct ClientHello {
  enum class Status {
    need_more,  // a prefix of a well-formed hello so far: read more and ask again
    not_tls,    // the first bytes are no TLS handshake record (plain HTTP, SSH, ...)
    malformed,  // TLS, but no well-formed ClientHello (or longer than kMaxHelloBytes)
    complete,
  };
  Status status = Status::need_more;
  std::string reason;              // for malformed: what was wrong, for the audit row
  std::string server_name;         // SNI host_name, lower-cased; empty: none sent
  std::vector<std::string> alpn;   // protocols offered, in order
  bool encrypted_client_hello = false;  // ECH offered: the SNI above is the public name only
  std::uint16_t legacy_version = 0;     // 0x0303 for TLS 1.2 and 1.3 hellos
  std::size_t bytes = 0;           // complete: the records that carried the hello
};

ClientHello read_client_hello(std::span<const std::uint8_t> bytes);

}  // namespace netbox::tls
