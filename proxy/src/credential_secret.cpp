#include "netbox/proxy/credential_secret.hpp"

#include <openssl/crypto.h>

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace netbox::proxy {

Secret& Secret::operator=(const Secret& other) {
  if (this != &other) {
    wipe();
    value_ = other.value_;
  }
  return *this;
}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe();
    value_ = other.value_;
    other.wipe();
  }
  return *this;
}

// OPENSSL_cleanse: a plain memset before free may be optimised away.
void Secret::wipe() noexcept {
  if (!value_.empty()) OPENSSL_cleanse(value_.data(), value_.size());
  value_.clear();
}

std::string make_placeholder(std::string_view name) {
  std::array<std::uint8_t, 16> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("no random bytes for a credential's placeholder (getrandom failed)");
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "nbx-" + std::string(name) + "-";
  for (auto b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace netbox::proxy
