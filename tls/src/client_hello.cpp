#include "netbox/tls/client_hello.hpp"

#include <algorithm>
#include <optional>

namespace netbox::tls {
namespace {

using Status = ClientHello::Status;

constexpr std::uint8_t kHandshakeRecord = 22;
constexpr std::uint8_t kClientHelloType = 1;
constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kMaxRecordBody = 16384 + 256;  // TLSPlaintext bound, with slack seen in the wild
constexpr std::uint16_t kServerName = 0;
constexpr std::uint16_t kAlpn = 16;
constexpr std::uint16_t kEncryptedClientHello = 0xfe0d;

// A cursor over the reassembled handshake message; every read checks the bound.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
  bool has(std::size_t n) const { return b_.size() - pos_ >= n; }
  std::size_t left() const { return b_.size() - pos_; }
  std::optional<std::uint32_t> uint(std::size_t n) {
    if (!has(n)) return std::nullopt;
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | b_[pos_ + i];
    pos_ += n;
    return v;
  }
  void skip(std::size_t n) { pos_ += std::min(n, left()); }
  // A length-prefixed vector: its bytes, with the cursor moved past it.
  std::optional<std::span<const std::uint8_t>> vec(std::size_t len_bytes) {
    auto n = uint(len_bytes);
    if (!n || !has(*n)) return std::nullopt;
    auto out = b_.subspan(pos_, *n);
    pos_ += *n;
    return out;
  }

 private:
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
};

ClientHello failed(Status s, std::string reason) {
  ClientHello h;
  h.status = s;
  h.reason = std::move(reason);
  return h;
}

// RFC 6066: one host_name, DNS letters, digits, '-', '_' and '.' (no IP literal). Upper
// case is folded and one final dot dropped ("evil." is the name evil, as for a Host
// header), so the name is compared as servers read it; anything else makes the hello
// malformed, so no byte of an agent's choosing reaches a log or a certificate through
// the SNI.
bool take_server_name(std::span<const std::uint8_t> ext, ClientHello& h) {
  Reader r(ext);
  auto list = r.vec(2);
  if (!list || r.left() != 0) return false;
  Reader names(*list);
  bool seen = false;
  while (names.left() > 0) {
    auto type = names.uint(1);
    auto name = names.vec(2);
    if (!type || !name) return false;
    if (*type != 0) continue;  // no other name type is defined; skip, as servers do
    if (seen || name->empty() || name->size() > 253) return false;
    seen = true;
    for (std::uint8_t c : *name) {
      char ch = static_cast<char>(c);
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
      if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.')) return false;
      h.server_name.push_back(ch);
    }
    if (h.server_name.size() > 1 && h.server_name.back() == '.') h.server_name.pop_back();
    if (h.server_name.front() == '.' || h.server_name.back() == '.') return false;
  }
  return seen;
}

bool take_alpn(std::span<const std::uint8_t> ext, ClientHello& h) {
  Reader r(ext);
  auto list = r.vec(2);
  if (!list || r.left() != 0 || list->empty()) return false;
  Reader protos(*list);
  while (protos.left() > 0) {
    auto p = protos.vec(1);
    if (!p || p->empty()) return false;
    h.alpn.emplace_back(p->begin(), p->end());
  }
  return true;
}

ClientHello parse_hello_body(std::span<const std::uint8_t> body) {
  ClientHello h;
  Reader r(body);
  auto version = r.uint(2);
  if (!version || !r.has(32)) return failed(Status::malformed, "ClientHello too short");
  h.legacy_version = static_cast<std::uint16_t>(*version);
  r.skip(32);  // random
  auto session = r.vec(1);
  if (!session || session->size() > 32) return failed(Status::malformed, "bad session id");
  auto suites = r.vec(2);
  if (!suites || suites->empty() || suites->size() % 2 != 0) return failed(Status::malformed, "bad cipher suites");
  auto compression = r.vec(1);
  if (!compression || compression->empty()) return failed(Status::malformed, "bad compression methods");
  if (r.left() == 0) {  // no extensions at all (SSL 3-era clients): no SNI, no ALPN
    h.status = Status::complete;
    return h;
  }
  auto exts = r.vec(2);
  if (!exts || r.left() != 0) return failed(Status::malformed, "bad extensions length");
  Reader e(*exts);
  std::vector<std::uint16_t> seen;
  while (e.left() > 0) {
    auto type = e.uint(2);
    auto data = e.vec(2);
    if (!type || !data) return failed(Status::malformed, "truncated extension");
    auto t = static_cast<std::uint16_t>(*type);
    // A repeated extension is forbidden (RFC 8446 4.2), and two SNIs could be read one
    // way here and another by the server.
    if (std::find(seen.begin(), seen.end(), t) != seen.end())
      return failed(Status::malformed, "extension " + std::to_string(t) + " repeated");
    seen.push_back(t);
    if (t == kServerName && !take_server_name(*data, h)) return failed(Status::malformed, "bad server_name");
    if (t == kAlpn && !take_alpn(*data, h)) return failed(Status::malformed, "bad ALPN list");
    if (t == kEncryptedClientHello) h.encrypted_client_hello = true;
  }
  h.status = Status::complete;
  return h;
}

}  // namespace

ClientHello read_client_hello(std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) return {};
  if (bytes[0] != kHandshakeRecord) return failed(Status::not_tls, "not a TLS handshake record");
  // Reassemble the handshake message from as many records as it spans.
  std::vector<std::uint8_t> message;
  std::size_t pos = 0;
  std::optional<std::size_t> want;  // 4 + the handshake length, once known
  while (!want || message.size() < *want) {
    if (bytes.size() - pos < kRecordHeader) {
      if (pos < bytes.size() && bytes[pos] != kHandshakeRecord)
        return failed(pos == 0 ? Status::not_tls : Status::malformed, "a record of another type inside the hello");
      if (bytes.size() - pos >= 2 && bytes[pos + 1] != 3)
        return failed(pos == 0 ? Status::not_tls : Status::malformed, "not a TLS record version");
      return {};
    }
    const std::uint8_t* rec = bytes.data() + pos;
    if (rec[0] != kHandshakeRecord) return failed(Status::malformed, "a record of another type inside the hello");
    if (rec[1] != 3) return failed(pos == 0 ? Status::not_tls : Status::malformed, "not a TLS record version");
    const std::size_t len = (std::size_t{rec[3]} << 8) | rec[4];
    if (len == 0 || len > kMaxRecordBody) return failed(Status::malformed, "bad record length");
    if (bytes.size() - pos - kRecordHeader < len) {
      // Know early when the hello cannot fit, rather than waiting for bytes forever.
      if (pos + kRecordHeader + len > kMaxHelloBytes + 4 * kRecordHeader)
        return failed(Status::malformed, "ClientHello longer than " + std::to_string(kMaxHelloBytes) + " bytes");
      return {};
    }
    message.insert(message.end(), rec + kRecordHeader, rec + kRecordHeader + len);
    pos += kRecordHeader + len;
    if (!want && message.size() >= 4) {
      if (message[0] != kClientHelloType) return failed(Status::malformed, "first handshake message is no ClientHello");
      const std::size_t body = (std::size_t{message[1]} << 16) | (std::size_t{message[2]} << 8) | message[3];
      if (body > kMaxHelloBytes) return failed(Status::malformed, "ClientHello longer than " + std::to_string(kMaxHelloBytes) + " bytes");
      want = 4 + body;
    }
    if (message.size() > kMaxHelloBytes + 4) return failed(Status::malformed, "ClientHello longer than " + std::to_string(kMaxHelloBytes) + " bytes");
  }
  // The hello must end with its record: another handshake message in the same record
  // before the server's reply is not something a client sends.
  if (message.size() != *want) return failed(Status::malformed, "data after the ClientHello in its record");
  ClientHello h = parse_hello_body(std::span<const std::uint8_t>(message).subspan(4));
  if (h.status == Status::complete) h.bytes = pos;
  return h;
}

}  // namespace netbox::tls
