#pragma once
// Acting on what the policy decided once admission let a host through: a request
// (policy::decide_request), a tunnel (policy::decide_tunnel), a TLS server name
// (policy::check_server_name). The proxy turns the answer into its own values and
// derives nothing: a refusal carries the decision's outcome, rule and reason; anything
// let through becomes the row's decision.
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/decision.hpp"
#include "netbox/tls/client_hello.hpp"

#include "pipeline/admission.hpp"
#include "pipeline/denial.hpp"

#include <optional>

namespace netbox::proxy {

// The answer to give for a decision that refuses, with `status`.
Refusal refusal_of(const policy::Decision& d, unsigned status);

// `status` 0: `d` becomes `yes`'s decision (and outcome), nullopt. Otherwise the refusal
// of it, about the first address `yes` would have dialled.
std::optional<Refused> take_decision(Admitted& yes, policy::Decision d, unsigned status);

// What the policy reads of a ClientHello for the fronting check.
policy::ServerNameAsked server_name_asked(const tls::ClientHello& hello);

}  // namespace netbox::proxy
