#pragma once
// Where an answer may hide a secret the proxy injected (issue 22): as sent, or in one of
// the standard escapings an echoing upstream would give it - JSON string escapes (`\/`,
// `\uXXXX` for any character), percent-encoding (up to three rounds, any case), base64
// (standard or URL-safe, at any alignment inside a longer base64 text, so the encoding of
// the formatted header value "Bearer <secret>" is found too) and any of these in turn
// JSON-escaped or percent-encoded. A secret found in a form other than as sent cannot be
// replaced in place; the answer is refused instead.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

// One round of %XX decoding (either case) in place; false when there was nothing to decode.
// The tripwire reads the agent's requests with it, the answer scan the upstream's answers.
bool percent_decode(std::string& s);

class SecretForms {
 public:
  explicit SecretForms(std::string_view secret);
  // Which form of the secret `text` holds ("as sent", "JSON-escaped", "percent-encoded",
  // "base64-encoded"); empty: none.
  std::string found_in(std::string_view text) const;

 private:
  std::string_view secret_;
  std::vector<std::string> base64_;  // the parts of its base64 forms that do not depend on their neighbours
};

}  // namespace netbox::proxy
