#include "netbox/tokens/client_token.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace netbox::tokens {
namespace {

constexpr std::size_t kIdBytes = 6;       // 12 hex digits
constexpr std::size_t kSecretBytes = 32;  // 43 base64url characters
constexpr std::size_t kSecretChars = 43;

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 0xf];
  }
  return out;
}

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_base64url(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

template <std::size_t N>
std::array<unsigned char, N> random_bytes() {
  std::array<unsigned char, N> b{};
  if (RAND_bytes(b.data(), static_cast<int>(N)) != 1) throw std::runtime_error("no randomness for a client token");
  return b;
}

std::string base64url(const unsigned char* p, std::size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
  out.resize(static_cast<std::size_t>(len));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

}  // namespace

std::optional<TokenParts> parse_token(std::string_view text) {
  if (!text.starts_with(kTokenPrefix)) return std::nullopt;
  text.remove_prefix(kTokenPrefix.size());
  if (text.size() != 2 * kIdBytes + 1 + kSecretChars || text[2 * kIdBytes] != '_') return std::nullopt;
  const auto id = text.substr(0, 2 * kIdBytes);
  const auto secret = text.substr(2 * kIdBytes + 1);
  for (char c : id)
    if (!is_hex_digit(c)) return std::nullopt;
  for (char c : secret)
    if (!is_base64url(c)) return std::nullopt;
  return TokenParts{std::string(id), std::string(secret)};
}

std::string secret_digest(std::string_view secret) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(secret.data(), secret.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed");
  return hex(md, len);
}

IssuedToken issue_token(std::string agent, std::string profile, std::chrono::seconds ttl, std::int64_t now) {
  const auto id = random_bytes<kIdBytes>();
  const auto secret = random_bytes<kSecretBytes>();
  IssuedToken t;
  t.entry.id = hex(id.data(), id.size());
  const std::string secret_text = base64url(secret.data(), secret.size());
  t.entry.agent = std::move(agent);
  t.entry.profile = std::move(profile);
  t.entry.digest = secret_digest(secret_text);
  t.entry.created = now;
  t.entry.expires = now + ttl.count();
  t.token = std::string(kTokenPrefix) + t.entry.id + "_" + secret_text;
  return t;
}

}  // namespace netbox::tokens
