#include "netbox/tokens/token_book.hpp"

#include "book_file.hpp"

#include <openssl/crypto.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace netbox::tokens {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using book_file::fail;
using book_file::text_of;

std::int64_t seconds_of(const json& e, const fs::path& path, const std::string& at, const char* key) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number_integer()) fail(path, at + "." + key + ": expected whole unix seconds");
  return it->get<std::int64_t>();
}

TokenEntry entry_of(const json& e, const fs::path& path, const std::string& at) {
  if (!e.is_object()) fail(path, at + ": expected an object");
  TokenEntry t;
  t.id = text_of(e, path, at, "id", true);
  t.agent = text_of(e, path, at, "agent", true);
  t.profile = text_of(e, path, at, "profile", false);
  t.digest = text_of(e, path, at, "sha256", true);
  t.created = seconds_of(e, path, at, "created");
  t.expires = seconds_of(e, path, at, "expires");
  if (const auto it = e.find("revoked"); it != e.end()) {
    if (!it->is_boolean()) fail(path, at + ".revoked: expected true or false");
    t.revoked = it->get<bool>();
  }
  // The shapes parse_token and secret_digest give, so nothing hand-edited slips past them.
  if (!parse_token(std::string(kTokenPrefix) + t.id + "_" + std::string(43, 'A')))
    fail(path, at + ".id: expected 12 lowercase hex digits");
  if (t.digest.size() != 64 || t.digest.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(path, at + ".sha256: expected 64 lowercase hex digits");
  if (t.agent.empty()) fail(path, at + ".agent: empty");
  return t;
}

std::string short_form(std::string_view id) { return std::string(kTokenPrefix) + std::string(id); }

}  // namespace

TokenVerdict TokenBook::verify(std::string_view token, std::int64_t now) const {
  const auto parts = parse_token(token);
  if (!parts) return {std::nullopt, "the credential is not a netbox client token"};
  const TokenEntry* found = nullptr;
  for (const auto& e : entries_)
    if (e.id == parts->id) found = &e;
  if (!found) return {std::nullopt, "token " + short_form(parts->id) + " is not in the token book"};
  const auto digest = secret_digest(parts->secret);
  if (CRYPTO_memcmp(digest.data(), found->digest.data(), digest.size()) != 0 || found->digest.size() != digest.size())
    return {std::nullopt, "token " + short_form(parts->id) + " does not match its digest"};
  if (found->revoked) return {std::nullopt, "token " + short_form(parts->id) + " was revoked"};
  if (now >= found->expires) return {std::nullopt, "token " + short_form(parts->id) + " has expired"};
  return {TokenGrant{found->id, found->agent, found->profile}, {}};
}

bool TokenBook::revoke(std::string_view id) {
  bool any = false;
  for (auto& e : entries_)
    if (e.id == id) e.revoked = any = true;
  return any;
}

TokenBook load_token_book(const fs::path& path, bool missing_is_empty) {
  const auto j = book_file::read_book_file(path, missing_is_empty, "whoever may write it can make up a client's identity");
  if (!j) return {};
  auto entries = book_file::entries_of<TokenEntry>(*j, path, "tokens", entry_of);
  return TokenBook(std::move(entries));
}

void save_token_book(const fs::path& path, const TokenBook& book) {
  json tokens = json::array();
  for (const auto& e : book.entries())
    tokens.push_back({{"id", e.id}, {"agent", e.agent}, {"profile", e.profile}, {"sha256", e.digest},
                      {"created", e.created}, {"expires", e.expires}, {"revoked", e.revoked}});
  const std::string text = json{{"version", 1}, {"tokens", tokens}}.dump(2) + "\n";
  const fs::path tmp = path.string() + ".new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) fail(tmp, std::strerror(errno));
  const bool written = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    fail(tmp, std::strerror(saved));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::strerror(e));
  }
}

}  // namespace netbox::tokens
