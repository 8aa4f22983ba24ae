#pragma once
// The path a method/path rule is matched against, for plain HTTP and inspected HTTPS
// (issue 16). One canonical form is both matched and forwarded, so the upstream serves
// exactly the path the policy looked at:
//   - percent-encoded unreserved characters are decoded (%41 -> A, %7E -> ~), other
//     escapes kept with upper-case hex (%c3%a9 -> %C3%A9);
//   - "." and ".." segments are resolved (RFC 3986 5.2.4) and empty segments ("//")
//     folded; climbing above the root is refused;
//   - refused outright (400), because servers disagree on what they mean and one of the
//     readings could escape the rule: an encoded slash or backslash (%2F, %5C), an
//     encoded NUL, a dot segment spelled with escapes (%2e%2e), a dot segment with
//     parameters ("..;x", which Tomcat reads as ".."), a raw backslash, a fragment, and
//     any byte RFC 3986 does not allow in a path (spaces, controls, non-ASCII).
// The query is kept as sent and matched only where a rule names it.
#include <string>
#include <string_view>

namespace netbox::policy {

struct RequestPath {
  std::string path;     // canonical, starting with '/'; empty when refused
  std::string query;    // after '?', as sent (without the '?')
  bool has_query = false;
  std::string refusal;  // why the path was refused (for a 400 and the audit row); empty: fine
  bool ok() const { return refusal.empty(); }
};

// `target` is an origin-form request target ("/a/b?c"), as the proxy forwards it.
RequestPath normalize_request_path(std::string_view target);

// A rule's path pattern against a canonical path: '*' matches any run of characters
// within one segment, except as the pattern's last character, where it matches the rest
// of the path ("/repos/acme/*" covers "/repos/acme/x/pulls" but not "/repos/acme").
// Patterns are canonical paths themselves (the policy loader checks that).
bool path_matches(std::string_view pattern, std::string_view path);

}  // namespace netbox::policy
