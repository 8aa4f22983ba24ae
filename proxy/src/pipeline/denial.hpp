#pragma once
// The answers netbox gives instead of forwarding: a status, X-Netbox-Decision,
// X-Netbox-Reason, and a short plain-text body saying what was blocked, by which rule
// or limit, and what the agent could do instead.
#include "pipeline/outcome.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <string>

namespace netbox::proxy {

struct Refusal {
  unsigned status = 403;
  Outcome outcome = Outcome::error;  // deny (the policy's), cap, budget or error: X-Netbox-Decision
  std::string what;    // "GET http://example.com/", "CONNECT example.com:22"
  std::string rule;    // the policy rule or limit ("deny[0] *.evil.example", "limits.max_connections")
  std::string reason;  // the policy's (or proxy's) reason sentence
  std::optional<unsigned> retry_after;  // seconds, for 429
};

// What the agent can do about it, by status (and reason for 502).
std::string advice_for(const Refusal& r);

boost::beast::http::response<boost::beast::http::string_body> make_refusal(const Refusal& r, unsigned version,
                                                                          bool keep_alive);

}  // namespace netbox::proxy
