#pragma once
// A credential's secret as the launcher hands it to the proxy (issue 16): the agent holds
// only the placeholder; the proxy puts the secret into inspected requests to the
// credential's hosts. `Secret` never prints (no operator<<, no to_string, no conversion)
// and zeroes its bytes when it is destroyed or moved from, so the value is not left
// behind in freed memory that a later log line or core file could show.
#include <cstddef>
#include <string>
#include <string_view>

namespace netbox::proxy {

class Secret {
 public:
  Secret() = default;
  // Takes the value and zeroes `value`'s own bytes (the caller's copy goes with it).
  explicit Secret(std::string value);
  Secret(const Secret& other) { assign(other.reveal()); }
  Secret(Secret&& other) noexcept : data_(other.data_), size_(other.size_), mapped_(other.mapped_) {
    other.data_ = nullptr;
    other.size_ = other.mapped_ = 0;
  }
  Secret& operator=(const Secret& other);
  Secret& operator=(Secret&& other) noexcept;
  ~Secret() { wipe(); }

  bool empty() const { return size_ == 0; }
  // For the one place that writes it upstream, and the control socket's line.
  std::string_view reveal() const { return {data_, size_}; }

 private:
  // The bytes live in pages of their own, marked MADV_DONTDUMP (never in a core file) and
  // MADV_WIPEONFORK (a process forked or cloned from this one, such as the launcher's
  // netbox-init, sees them zeroed). Throws std::runtime_error when they cannot be had so.
  void assign(std::string_view value);
  void wipe() noexcept;  // zeroes and unmaps
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

struct CredentialSecret {
  std::string name;         // the policy's credentials[].name
  std::string placeholder;  // what the agent holds instead: nbx-NAME-<random>
  Secret secret;
};

// nbx-NAME-<32 hex digits from the kernel's CSPRNG (getrandom)>; a new one per call.
// Throws std::runtime_error when no random bytes can be had.
std::string make_placeholder(std::string_view name);

}  // namespace netbox::proxy
