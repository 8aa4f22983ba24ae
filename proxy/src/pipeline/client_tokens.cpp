#include "pipeline/client_tokens.hpp"

#include "netbox/policy/policy.hpp"

namespace netbox::proxy {
namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

ClientTokens::ClientTokens(std::filesystem::path book, bool allow_anonymous,
                           std::function<void(bool, const std::string&)> on_reload)
    : allow_anonymous_(allow_anonymous),
      book_(std::move(book), [](const std::filesystem::path& p) { return tokens::load_token_book(p); },
            [](const tokens::TokenBook& b) { return std::to_string(b.entries().size()) + " tokens"; },
            std::move(on_reload)) {}

std::optional<std::string> missing_profile(const std::string& credential, const std::string& profile,
                                           const policy::Policy& policy) {
  if (profile.empty() || policy.agents.contains(profile)) return std::nullopt;
  return credential + " names profile '" + profile + "', which the policy has no agents entry for";
}

std::size_t ClientTokens::size() { return book_.current()->entries().size(); }

ClientTokens::Verdict ClientTokens::identify(std::string_view token, const policy::Policy& policy) {
  if (token.empty()) {
    if (allow_anonymous_) return {AgentIdentity{}, {}, {}};
    return {std::nullopt,
            "this proxy needs a client token: send it as the proxy password (http://agent:TOKEN@proxy:port); "
            "`netbox token create` issues one",
            {}};
  }
  const auto now = book_.snapshot();
  const auto v = now.book->verify(token, unix_now());
  if (!v.grant) return {std::nullopt, v.why, {}};
  if (auto why = missing_profile("token " + std::string(tokens::kTokenPrefix) + v.grant->id, v.grant->profile, policy))
    return {std::nullopt, std::move(*why), {}};
  AgentIdentity who;
  who.agent = v.grant->agent;
  who.profile = v.grant->profile;
  Held held{{}, now.generation};
  for (const auto& e : now.book->entries())
    if (e.id == v.grant->id) held.entry = e;
  return {std::move(who), {}, std::move(held)};
}

std::string ClientTokens::recheck(Held& held) {
  // The common path: the book has not changed and the token has not expired.
  const bool looked = book_.due(std::chrono::steady_clock::now());
  const auto id = "token " + std::string(tokens::kTokenPrefix) + held.entry.id;
  if (unix_now() >= held.entry.expires) return id + " has expired";
  if (!looked && held.generation == book_.generation()) return {};
  const auto now = book_.snapshot();
  if (held.generation == now.generation) return {};
  const tokens::TokenEntry* found = nullptr;
  for (const auto& e : now.book->entries())
    if (e.id == held.entry.id) found = &e;
  if (!found) return id + " is no longer in the token book";
  if (found->revoked) return id + " was revoked";
  // Re-issued under the same id, or moved to another agent or profile: a new connection
  // must show it again.
  if (found->digest != held.entry.digest || found->agent != held.entry.agent ||
      found->profile != held.entry.profile || found->expires != held.entry.expires)
    return id + " changed in the token book: connect again";
  held.generation = now.generation;
  return {};
}

}  // namespace netbox::proxy
