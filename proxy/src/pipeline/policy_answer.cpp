#include "pipeline/policy_answer.hpp"

#include "netbox/proxy/endpoint.hpp"

#include <utility>

namespace netbox::proxy {

Refusal refusal_of(const policy::Decision& d, unsigned status) {
  return Refusal{status, outcome_of(d.verdict), {}, d.rule, d.reason, {}};
}

std::optional<Refused> take_decision(Admitted& yes, policy::Decision d, unsigned status) {
  if (status == 0) {
    yes.decision = std::move(d);
    return std::nullopt;
  }
  Refused no{refusal_of(d, status), d.rule, d.reason, {}, {}};
  if (!yes.endpoints.empty()) no.resolved_addr = address_text(yes.endpoints.front().address());
  return no;
}

policy::ServerNameAsked server_name_asked(const tls::ClientHello& hello) {
  const bool readable = hello.status == tls::ClientHello::Status::complete;
  return policy::ServerNameAsked{readable, hello.server_name, hello.encrypted_client_hello, hello.reason};
}

}  // namespace netbox::proxy
