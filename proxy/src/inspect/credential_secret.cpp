#include "netbox/proxy/credential_secret.hpp"

#include <openssl/crypto.h>

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace netbox::proxy {

Secret::Secret(std::string value) {
  assign(value);
  OPENSSL_cleanse(value.data(), value.capacity());  // a short value sits in the object itself
}

Secret& Secret::operator=(const Secret& other) {
  if (this != &other) {
    wipe();
    assign(other.reveal());
  }
  return *this;
}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe();
    data_ = other.data_;
    size_ = other.size_;
    mapped_ = other.mapped_;
    other.data_ = nullptr;
    other.size_ = other.mapped_ = 0;
  }
  return *this;
}

void Secret::assign(std::string_view value) {
  if (value.empty()) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t length = (value.size() + page - 1) / page * page;
  void* at = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (at == MAP_FAILED) throw std::runtime_error("no memory for a credential's secret (mmap failed)");
  // Before the bytes go in: a page that cannot be kept out of core files and forks is
  // refused rather than used.
  if (::madvise(at, length, MADV_DONTDUMP) != 0 || ::madvise(at, length, MADV_WIPEONFORK) != 0) {
    const int e = errno;
    ::munmap(at, length);
    throw std::runtime_error(std::string("cannot keep a credential's secret out of core files and forks (madvise: ") +
                             std::strerror(e) + ")");
  }
  data_ = static_cast<char*>(at);
  size_ = value.size();
  mapped_ = length;
  std::memcpy(data_, value.data(), size_);
}

// OPENSSL_cleanse: a plain memset before munmap may be optimised away.
void Secret::wipe() noexcept {
  if (!data_) return;
  OPENSSL_cleanse(data_, size_);
  ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
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
