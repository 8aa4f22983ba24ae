#pragma once
// Connection caps: global, per agent, per destination host. The per-host cap counts the
// name and, separately, the address it is dialled at, so a hundred aliases of one address
// (or IP literals for it) share that address's bucket. Taken as RAII tokens so a
// slot is given back however a connection ends. Exact across threads (one mutex,
// held only for a few map operations).
#include "netbox/policy/policy.hpp"

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace netbox::proxy {

class Caps;

class CapToken {
 public:
  CapToken() = default;
  CapToken(Caps* caps, std::string agent, std::string host, std::string address)
      : caps_(caps), agent_(std::move(agent)), host_(std::move(host)), address_(std::move(address)) {}
  CapToken(CapToken&& o) noexcept { *this = std::move(o); }
  CapToken& operator=(CapToken&& o) noexcept;
  CapToken(const CapToken&) = delete;
  CapToken& operator=(const CapToken&) = delete;
  ~CapToken() { release(); }
  void release();
  explicit operator bool() const { return caps_ != nullptr; }

 private:
  Caps* caps_ = nullptr;
  std::string agent_;
  std::string host_;
  std::string address_;
};

// Which limit refused a connection (none: it was taken).
enum class CapKind { none, global, per_agent, per_host, per_address };

// The policy key a refusal cites: "limits.max_connections" ... (per_address shares
// per_host's key: one limit, counted by name and by address).
std::string_view rule_of(CapKind k);

struct CapResult {
  CapToken token;           // empty when a limit was hit
  CapKind kind = CapKind::none;
  std::string reason;       // when a limit was hit
  std::size_t limit = 0;
};

class Caps {
 public:
  // `global` comes from the top-level profile; `mine` from the agent's profile.
  // `address` is the (canonical) address the host is dialled at first.
  CapResult acquire(const std::string& agent, const std::string& host, const std::string& address,
                    const policy::Limits& global, const policy::Limits& mine);
  std::size_t total() const;

 private:
  friend class CapToken;
  void release(const std::string& agent, const std::string& host, const std::string& address);

  mutable std::mutex mu_;
  std::size_t total_ = 0;
  std::unordered_map<std::string, std::size_t> per_agent_;
  std::unordered_map<std::string, std::size_t> per_host_;
  std::unordered_map<std::string, std::size_t> per_address_;
};

}  // namespace netbox::proxy
