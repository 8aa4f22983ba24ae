#pragma once
// The method/path step (issue 16, `rules`), after admission let the host through, for a
// request whose method and path netbox sees: plain HTTP now, inspected HTTPS later. For
// a host some rule names, the path is made canonical first (policy::normalize_request_path)
// and that one canonical path is both matched and forwarded, so the upstream serves
// exactly what the policy looked at. A path that cannot be made canonical is refused,
// 400, as `deny` (it is a policy refusal: rules name the host and could not be applied).
// A CONNECT to a host some rule names is refused unless netbox inspects it: a blind
// tunnel would carry requests no rule could check. In report mode nothing is refused:
// the verdict's decision is a report with the reason, and the request goes as sent.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/policy.hpp"

#include "denial.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::proxy {

struct RequestVerdict {
  std::optional<Refusal> refusal;  // 400 (path refused) or 403 (a rule, or no rule, denies)
  // Let through: the request rule that allowed it (or, in report mode, would have
  // denied it); empty rule when no rule names the host (the host decision stands).
  policy::Decision decision;
  std::string path_and_query;      // canonical, to forward; empty when no rule names the host
  std::string path;                // canonical, for the audit row
};

RequestVerdict decide_request_rules(const policy::Profile& profile, const std::string& host, std::uint16_t port,
                                    std::string_view method, std::string_view path_and_query);

// For a CONNECT: refused when rules name the host and netbox does not inspect it.
RequestVerdict decide_blind_tunnel(const policy::Profile& profile, const std::string& host,
                                           std::uint16_t port);

}  // namespace netbox::proxy
