#pragma once
// A client token (issue 26 item 5): what a client that netbox did not launch (a CI job
// pointing HTTP_PROXY at a shared proxy) shows to be an agent with a profile. Its text is
//
//   nbt1_ID_SECRET    ID: 12 lowercase hex digits, the token's name in rows, logs and
//                     `netbox token list` (not secret); SECRET: 32 random bytes, base64url
//                     without padding (43 characters)
//
// so it fits where proxy URLs carry a password (http://agent:TOKEN@proxy:3128) without
// escaping. Only SECRET's SHA-256 is ever kept.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::tokens {

inline constexpr std::string_view kTokenPrefix = "nbt1_";

struct TokenParts {
  std::string id;
  std::string secret;
};

// The parts of `text`, or nullopt when it is not a client token's shape.
std::optional<TokenParts> parse_token(std::string_view text);

// SHA-256 of a token's secret, lowercase hex.
std::string secret_digest(std::string_view secret);

// One issued token as the book keeps it.
struct TokenEntry {
  std::string id;
  std::string agent;         // the agent name its connections are recorded under
  std::string profile;       // key of the policy's `agents`; empty: the top-level profile
  std::string digest;        // secret_digest(SECRET)
  std::int64_t created = 0;  // unix seconds
  std::int64_t expires = 0;  // unix seconds; the token is refused from then on
  bool revoked = false;
};

struct IssuedToken {
  TokenEntry entry;
  std::string token;  // the whole text, shown once and kept nowhere
};

// A new token for `agent` under `profile`, valid for `ttl` from `now` (unix seconds).
// Throws std::runtime_error when the system has no randomness to give.
IssuedToken issue_token(std::string agent, std::string profile, std::chrono::seconds ttl, std::int64_t now);

}  // namespace netbox::tokens
