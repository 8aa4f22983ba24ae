#pragma once
// Client identity on a shared proxy (issue 26 item 5): with `--client-tokens BOOK`, a client
// that netbox did not launch and that no registration names (it would be `anonymous`) must
// show a token from the book: in HTTP as the proxy password (Proxy-Authorization), in SOCKS5
// as the username/password method's password. The token names its agent and profile; a
// connection without one is refused 407 and recorded, unless `--allow-anonymous`. Launched
// agents need none: their identity is the socket they came through.
//
// The book is followed as followed_book.hpp says (read again when it changes; unreadable:
// every token refused, never the last good book).
//
// Identity is taken once per connection, but a token is not: a keep-alive HTTP connection
// keeps what its token was (Held, never the secret) and each later request checks it again
// (recheck) once the book has changed since (its generation) or the token has expired, so
// a revoked or expired token stops at the connection's next request. The common path is
// two clock reads and two atomic loads.
#include "netbox/tokens/token_book.hpp"

#include "agents/agent_registry.hpp"
#include "pipeline/followed_book.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::policy {
struct Policy;
}

namespace netbox::proxy {

class ClientTokens {
 public:
  // Reads `book` now; throws tokens::TokenBookError (the proxy does not start) when it cannot.
  // `on_reload(ok, text)` is called after each later read, for the log.
  ClientTokens(std::filesystem::path book, bool allow_anonymous,
               std::function<void(bool ok, const std::string& text)> on_reload = {});

  // Who a connection that would be `anonymous` is, given the token it sent (empty: none):
  // `who` set, the identity to decide it as (still `anonymous` when no token was sent and
  // anonymous clients are allowed); else `why`, the reason of its 407 (never the token).
  // What a connection keeps of the token it showed: its entry as verified (id, agent,
  // profile, digest and expiry; no secret) and the book's generation then.
  struct Held {
    tokens::TokenEntry entry;
    std::uint64_t generation = 0;
  };
  struct Verdict {
    std::optional<AgentIdentity> who;
    std::string why;
    std::optional<Held> held;  // with a token's `who`: what recheck() needs
  };
  Verdict identify(std::string_view token, const policy::Policy& policy);
  // Whether the token `held` still stands in the book as it is now: empty if so (`held` is
  // brought up to the book's generation), else why not (revoked, expired, gone, changed).
  std::string recheck(Held& held);

  bool allow_anonymous() const { return allow_anonymous_; }
  std::size_t size();  // tokens in the book as last read

 private:
  const bool allow_anonymous_;
  FollowedBook<tokens::TokenBook> book_;
};

// Why a credential whose grant names `profile` cannot be served under `policy` (no agents
// entry of that name); nullopt: it can. `credential` names it ("token nbt1_…").
std::optional<std::string> missing_profile(const std::string& credential, const std::string& profile,
                                           const policy::Policy& policy);

}  // namespace netbox::proxy
