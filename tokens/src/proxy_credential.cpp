#include "netbox/tokens/proxy_credential.hpp"

#include <openssl/evp.h>

#include <cctype>

namespace netbox::tokens {
namespace {

bool scheme_is(std::string_view value, std::string_view scheme) {
  if (value.size() <= scheme.size() || value[scheme.size()] != ' ') return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return false;
  return true;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Standard base64 with padding, as Basic credentials are; nullopt when it is not.
std::optional<std::string> base64_decoded(std::string_view in) {
  if (in.empty() || in.size() % 4 != 0 || in.size() > 4096) return std::nullopt;
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding as zero bytes.
  std::size_t size = static_cast<std::size_t>(n);
  if (in.ends_with("==")) size -= 2;
  else if (in.ends_with("=")) size -= 1;
  out.resize(size);
  return out;
}

}  // namespace

std::optional<std::string> token_from_proxy_authorization(std::string_view value) {
  value = trimmed(value);
  if (scheme_is(value, "bearer")) {
    auto token = trimmed(value.substr(7));
    if (token.empty()) return std::nullopt;
    return std::string(token);
  }
  if (!scheme_is(value, "basic")) return std::nullopt;
  auto pair = base64_decoded(trimmed(value.substr(6)));
  if (!pair) return std::nullopt;
  const auto colon = pair->find(':');
  if (colon == std::string::npos || colon + 1 == pair->size()) return std::nullopt;
  return pair->substr(colon + 1);
}

}  // namespace netbox::tokens
