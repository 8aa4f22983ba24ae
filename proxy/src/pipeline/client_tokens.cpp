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
  checked_ = std::chrono::steady_clock::now();
}

std::shared_ptr<const tokens::TokenBook> ClientTokens::current() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_ < 1s) return book_;
  checked_ = now;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && same_file(st, seen_)) return book_;
  seen_ = st;
  try {
    book_ = std::make_shared<const tokens::TokenBook>(tokens::load_token_book(path_));
    if (on_reload_) on_reload_(true, std::to_string(book_->entries().size()) + " tokens");
  } catch (const std::exception& e) {
    book_ = std::make_shared<const tokens::TokenBook>();
    if (on_reload_) on_reload_(false, e.what());
  }
  return book_;
}

std::size_t ClientTokens::size() { return current()->entries().size(); }

ClientTokens::Verdict ClientTokens::identify(std::string_view token, const policy::Policy& policy) {
  if (token.empty()) {
    if (allow_anonymous_) return {AgentIdentity{}, {}};
    return {std::nullopt,
            "this proxy needs a client token: send it as the proxy password (http://agent:TOKEN@proxy:port); "
            "`netbox token create` issues one"};
  }
  const auto v = current()->verify(token, unix_now());
  if (!v.grant) return {std::nullopt, v.why};
  if (!v.grant->profile.empty() && !policy.agents.contains(v.grant->profile))
    return {std::nullopt, "token " + std::string(tokens::kTokenPrefix) + v.grant->id + " names profile '" +
                              v.grant->profile + "', which the policy has no agents entry for"};
  AgentIdentity who;
  who.agent = v.grant->agent;
  who.profile = v.grant->profile;
  return {std::move(who), {}};
}

}  // namespace netbox::proxy
