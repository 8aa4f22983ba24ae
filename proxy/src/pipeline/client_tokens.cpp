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
    if (allow_anonymous_) return {AgentIdentity{}, {}};
    return {std::nullopt,
            "this proxy needs a client token: send it as the proxy password (http://agent:TOKEN@proxy:port); "
            "`netbox token create` issues one"};
  }
  const auto v = book_.current()->verify(token, unix_now());
  if (!v.grant) return {std::nullopt, v.why};
  if (auto why = missing_profile("token " + std::string(tokens::kTokenPrefix) + v.grant->id, v.grant->profile, policy))
    return {std::nullopt, std::move(*why)};
  AgentIdentity who;
  who.agent = v.grant->agent;
  who.profile = v.grant->profile;
  return {std::move(who), {}};
}

}  // namespace netbox::proxy
