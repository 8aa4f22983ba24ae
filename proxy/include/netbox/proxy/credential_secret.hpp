#pragma once
// A credential's secret as the launcher hands it to the proxy (issue 16): the agent holds
// only the placeholder; the proxy puts the secret into inspected requests to the
// credential's hosts. `Secret` never prints (no operator<<, no to_string, no conversion)
// and zeroes its bytes when it is destroyed or moved from, so the value is not left
// behind in freed memory that a later log line or core file could show.
#include <string>
#include <string_view>

namespace netbox::proxy {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret& other) : value_(other.value_) {}
  Secret(Secret&& other) noexcept : value_(other.value_) { other.wipe(); }
  Secret& operator=(const Secret& other);
  Secret& operator=(Secret&& other) noexcept;
  ~Secret() { wipe(); }

  bool empty() const { return value_.empty(); }
  // For the one place that writes it upstream, and the control socket's line.
  std::string_view reveal() const { return value_; }

 private:
  void wipe() noexcept;
  std::string value_;
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
