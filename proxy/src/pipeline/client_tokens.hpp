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
#include "netbox/tokens/token_book.hpp"

#include "agents/agent_registry.hpp"
#include "pipeline/followed_book.hpp"

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
  struct Verdict {
    std::optional<AgentIdentity> who;
    std::string why;
  };
  Verdict identify(std::string_view token, const policy::Policy& policy);

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
