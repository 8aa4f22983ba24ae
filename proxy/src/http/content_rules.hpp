#pragma once
// The content rules (issue 25, docs/policy.md "Content rules") on what netbox reads of an
// agent's requests, on every HTTP door (plain HTTP, captured, SOCKS5, inspected):
//  - `secrets`: a known secret format (content/secret_formats.hpp) in the request's target,
//    a header's value or the first body_window bytes of its body, as written or behind
//    percent, base64 or hex encoding;
//  - `encoded_labels`: a host name allowed only by a wildcard entry whose labels below the
//    wildcard look like encoded data (the payload of DNS and subdomain exfiltration).
// What they find is a `secret_in_request` or `encoded_label` event (a row, a log line, a
// count, a guardian trigger) that names the kind, where and a short digest, never the
// value; in `enforce` the request is refused 403 naming the rule, in `report` it goes on.
// A credential's placeholder is the tripwire's (credentials.hpp), not these rules': its
// form (nbx-NAME-hex) is none of the secret formats.
#include "netbox/content/secret_formats.hpp"
#include "netbox/policy/guardian_rules.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/policy.hpp"

#include "pipeline/denial.hpp"

#include <boost/beast/http/fields.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::proxy {

class Guardians;
class Exchange;
struct Target;

// A secret seen, without its value.
struct SecretSighting {
  content::SecretFound found;
  std::string where;  // "the URL", "the header X-Api-Key", "the body"
};

// The first known secret in the target or in one header's value (each searched alone).
std::optional<SecretSighting> secret_in_head(const boost::beast::http::fields& fields, std::string_view target);
// The first known secret in the first `window` bytes of a body.
std::optional<SecretSighting> secret_in_body(std::string_view body, std::size_t window);

// The label of `host` below the wildcard allow that lets it through, when it looks
// encoded; nullopt when an exact entry allows the name, no wildcard does, or its labels
// look ordinary. `rule` is set to the wildcard's cite.
std::optional<content::EncodedLabel> encoded_label_under_wildcard(const policy::Profile& profile,
                                                                  const std::string& host, std::uint16_t port,
                                                                  std::string& rule);

// The secrets rule on a request's head (every HTTP door, before admission; a CONNECT's
// target is a host name, which the encoded_labels rule reads). A secret in the path is
// withheld from the row (`row`'s path). The refusal in enforce mode.
std::optional<Refusal> secrets_in_head(Guardians& guardians, Exchange& row, const policy::Profile& profile,
                                       const std::string& agent, const std::string& host, const Target& target,
                                       const boost::beast::http::fields& fields);

// The body check a request relay runs on the first `window` bytes it holds back.
struct BodySecretScan {
  Guardians* guardians = nullptr;  // null: no scan
  std::string agent;
  std::string host;
  policy::ContentMode mode = policy::ContentMode::off;
  std::size_t window = 0;
  bool active() const { return guardians != nullptr && mode != policy::ContentMode::off; }
  // Records a sighting; the refusal in enforce mode.
  std::optional<Refusal> check(std::string_view first) const;
};

// The scan of a request body to `host` under `profile` (inactive when the rule is off).
BodySecretScan body_secret_scan(Guardians& guardians, const policy::Profile& profile, const std::string& agent,
                                const std::string& host);

}  // namespace netbox::proxy
