#include "pipeline/denial.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/version.hpp>

namespace netbox::proxy {

namespace http = boost::beast::http;

std::string advice_for(const Refusal& r) {
  switch (r.status) {
    case 400:
      return "Send the request through the proxy with an absolute URL (http://host/path), or use "
             "CONNECT host:port for TLS; do not put user names in URLs; frame a body with one "
             "Content-Length or with Transfer-Encoding: chunked, never both.";
    case 403:
      return "Use a destination the policy allows, or ask the operator to add this one to the policy. "
             "Retrying will not help.";
    case 407:
      return "Send a client token as the proxy password (http://agent:TOKEN@proxy:port); the operator "
             "issues one with `netbox token create`.";
    case 405:
      return "Use GET, HEAD, POST, PUT, DELETE, PATCH or OPTIONS with an http:// URL, or CONNECT for TLS.";
    case 413:
      return "Send a smaller request body.";
    case 429:
      return "Wait a moment and retry, and close connections you no longer need.";
    case 414:
      return "Use a shorter URL (the limit is 8 KiB); send large parameters in a POST body instead.";
    case 431:
      return "Send fewer or smaller headers (the limits are 64 KiB and 100 header lines).";
    case 502:
      return "Check the host name and port; the destination could not be reached or answered with "
             "something that is not HTTP. Retrying later may help.";
    case 503:
      return "The audit log cannot record requests right now, so netbox refuses them. Retry later or tell "
             "the operator.";
    case 504:
      return "The destination did not answer in time. Retry later, or check that the host and port are right.";
    default:
      return "Check the request and try again.";
  }
}

http::response<http::string_body> make_refusal(const Refusal& r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "netbox");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  // RFC 9110: a 407 says how to authenticate; clients resend with the proxy URL's password.
  if (r.status == 407) res.set(http::field::proxy_authenticate, "Basic realm=\"netbox\"");
  res.set(http::field::cache_control, "no-store");
  res.set("X-Netbox-Decision", to_string(r.outcome));
  std::string header_reason;
  for (char c : r.reason) header_reason += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  res.set("X-Netbox-Reason", header_reason);
  if (r.retry_after) res.set(http::field::retry_after, std::to_string(*r.retry_after));
  std::string body = "netbox ";
  body += refused_by_policy(r.outcome) ? "blocked this request by policy.\n"
          : r.outcome == Outcome::cap ? "refused this request: a connection limit was reached.\n"
                                      : "could not complete this request.\n";
  if (!r.what.empty()) body += "Request: " + r.what + "\n";
  body += "Reason: " + (r.reason.empty() ? std::string(http::obsolete_reason(res.result())) : r.reason) + "\n";
  if (!r.rule.empty()) body += (r.outcome == Outcome::cap ? "Limit: " : "Rule: ") + r.rule + "\n";
  body += "What you can do: " + advice_for(r) + "\n";
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace netbox::proxy
