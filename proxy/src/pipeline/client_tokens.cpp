#include "pipeline/client_tokens.hpp"

#include "netbox/policy/policy.hpp"

namespace netbox::proxy {
namespace {

using namespace std::chrono_literals;

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

ClientTokens::ClientTokens(std::filesystem::path book, bool allow_anonymous,
                           std::function<void(bool, const std::string&)> on_reload)
    : path_(std::move(book)), allow_anonymous_(allow_anonymous), on_reload_(std::move(on_reload)) {
  ::stat(path_.c_str(), &seen_);
  book_ = std::make_shared<const tokens::TokenBook>(tokens::load_token_book(path_));
  checked_ = std::chrono::steady_clock::now().time_since_epoch().count();
}

bool ClientTokens::due(std::chrono::steady_clock::time_point now) const {
  return now.time_since_epoch().count() - checked_.load(std::memory_order_relaxed) >=
         std::chrono::steady_clock::duration(1s).count();
}

ClientTokens::Snapshot ClientTokens::current() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!due(now)) return {book_, generation_.load()};
  checked_ = now.time_since_epoch().count();
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && same_file(st, seen_)) return {book_, generation_.load()};
  seen_ = st;
  try {
    book_ = std::make_shared<const tokens::TokenBook>(tokens::load_token_book(path_));
    if (on_reload_) on_reload_(true, std::to_string(book_->entries().size()) + " tokens");
  } catch (const std::exception& e) {
    book_ = std::make_shared<const tokens::TokenBook>();
    if (on_reload_) on_reload_(false, e.what());
  }
  return {book_, generation_.fetch_add(1) + 1};
}

std::size_t ClientTokens::size() { return current().book->entries().size(); }

ClientTokens::Verdict ClientTokens::identify(std::string_view token, const policy::Policy& policy) {
  if (token.empty()) {
    if (allow_anonymous_) return {AgentIdentity{}, {}, {}};
    return {std::nullopt,
            "this proxy needs a client token: send it as the proxy password (http://agent:TOKEN@proxy:port); "
            "`netbox token create` issues one",
            {}};
  }
  const auto now = current();
  const auto v = now.book->verify(token, unix_now());
  if (!v.grant) return {std::nullopt, v.why, {}};
  if (!v.grant->profile.empty() && !policy.agents.contains(v.grant->profile))
    return {std::nullopt,
            "token " + std::string(tokens::kTokenPrefix) + v.grant->id + " names profile '" + v.grant->profile +
                "', which the policy has no agents entry for",
            {}};
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
  const bool looked = due(std::chrono::steady_clock::now());
  const auto id = "token " + std::string(tokens::kTokenPrefix) + held.entry.id;
  if (unix_now() >= held.entry.expires) return id + " has expired";
  if (!looked && held.generation == generation_.load()) return {};
  const auto now = current();
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
