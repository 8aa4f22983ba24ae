#pragma once
// Plausible request rows for tests: the audit, dashboards and CLI tests build on these
// and change only what they check.
#include "netbox/audit/record.hpp"

#include <string>

namespace netbox::audit::testing {

inline AuditRecord request(std::string agent, std::string host, std::string decision,
                           Clock::time_point ts = Clock::now()) {
  AuditRecord r;
  r.ts = ts;
  r.agent = std::move(agent);
  r.client_addr = "10.213.0.2:41234";
  r.kind = "http";
  r.method = "GET";
  r.host = std::move(host);
  r.port = 80;
  r.path = "/index.html";
  r.resolved_addr = "127.0.0.1";
  r.decision = std::move(decision);
  r.rule = r.decision == "deny" ? "deny[0] *.evil.example" : "allow[0] " + r.host;
  r.reason = r.decision == "deny" ? r.host + " matches deny[0] *.evil.example" : r.host + " matches allow[0]";
  return r;
}

}  // namespace netbox::audit::testing
