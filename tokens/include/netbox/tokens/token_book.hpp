#pragma once
// The token book: every client token issued for a shared proxy, as a file the operator's
// `netbox token` commands write and `netbox proxy --client-tokens FILE` reads (and reads
// again when it changes). It holds digests, never tokens; still, whoever may write it can
// mint an identity, so it is checked like a policy file (owner and mode).
//
//   {"version": 1, "tokens": [{"id": "…", "agent": "ci", "profile": "ci", "sha256": "…",
//                              "created": 1795000000, "expires": 1795028800, "revoked": false}]}
#include "netbox/tokens/client_token.hpp"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::tokens {

// Who a verified token says the client is.
struct TokenGrant {
  std::string id;
  std::string agent;
  std::string profile;
};

// A token's verdict: the grant, or why not in words that never hold the secret
// ("token nbt1_0123456789ab has expired").
struct TokenVerdict {
  std::optional<TokenGrant> grant;
  std::string why;
};

class TokenBook {
 public:
  TokenBook() = default;
  explicit TokenBook(std::vector<TokenEntry> entries) : entries_(std::move(entries)) {}

  // Checks `token` at `now` (unix seconds): its shape, its id, its secret (compared in
  // constant time), revocation and expiry.
  TokenVerdict verify(std::string_view token, std::int64_t now) const;

  const std::vector<TokenEntry>& entries() const { return entries_; }
  void add(TokenEntry e) { entries_.push_back(std::move(e)); }
  // Marks the token with this id revoked; false when there is none.
  bool revoke(std::string_view id);

 private:
  std::vector<TokenEntry> entries_;
};

// A book file that cannot be used; what() names the file and, where one is at fault, the key.
struct TokenBookError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads the book at `path`; a missing file is an empty book only when `missing_is_empty`.
TokenBook load_token_book(const std::filesystem::path& path, bool missing_is_empty = false);
// Writes the book to `path` atomically (a new file renamed over it), mode 0600.
void save_token_book(const std::filesystem::path& path, const TokenBook& book);

}  // namespace netbox::tokens
