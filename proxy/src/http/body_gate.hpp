#pragma once
// A request whose rule checks bodies (policy/body_rules.hpp, issue 28): RequestRelay
// holds its whole body back (up to the rule's body_window, nothing of it upstream yet)
// and asks the gate, once, whether it may go. The gate takes off the Content-Encoding the
// server would (bounded by the window: content/body_coding.hpp) and applies check_body;
// a body it cannot read as the server will (a coding it does not decode, two
// Content-Type or Content-Encoding headers) is refused, never passed unchecked.
#include "netbox/policy/body_rules.hpp"

#include <boost/beast/http/fields.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace netbox::proxy {

class BodyGate {
 public:
  BodyGate(const policy::RequestRule& rule, policy::Mode mode, const boost::beast::http::fields& head);

  // The most the relay holds: one byte past it is refused (check_body says why).
  std::size_t window() const { return policy::body_window(*rule_); }
  // `body` as the agent sent it (after the transfer coding). Refused: status != 0.
  const policy::BodyCheck& check(std::string_view body);
  const policy::BodyCheck& result() const { return result_; }
  // What a checked body asked for, for the row: its JSON-RPC calls ("the body's JSON-RPC
  // calls: tools/call search, notifications/initialized") or a push's ref updates ("the
  // push's ref updates: refs/heads/agent/x"); empty when the rule reads neither.
  const std::string& calls() const { return calls_; }

 private:
  const policy::RequestRule* rule_;  // a pointer: ActiveRequest is reset by assignment
  policy::Mode mode_;
  std::string content_type_;
  std::string coding_;
  std::string header_problem_;
  policy::BodyCheck result_;
  std::string calls_;
};

}  // namespace netbox::proxy
