#pragma once
// Audit rows and events as OCSF records (https://schema.ocsf.io), checked against the schema's
// own class definitions by tests/data/ocsf (the subset of the schema we use, with its
// version). What maps where:
//   http rows (plain HTTP, requests inside inspected tunnels)  -> HTTP Activity (4002)
//   connect, socks and transparent rows (tunnels)              -> Network Activity (4001)
//   dns rows (the agents' DNS view)                            -> DNS Activity (4003)
//   and, beside its activity, every refused (deny) or reported
//   row, and every event an agent caused (exfiltration_attempt) -> Detection Finding (2004)
// Each record carries netbox's own columns under unmapped.netbox (agent, decision, rule,
// reason, ...). Only what the audit row holds is exported: never a header, a query string or
// a body, so no credential secret or placeholder reaches an export that the row does not hold.
#include "netbox/audit/record.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace netbox::siem {

inline constexpr const char* kOcsfVersion = "1.9.0-dev";  // tests/data/ocsf/README.md: the commit

struct Product {
  std::string version;  // netbox's
  std::string proxy_id; // which proxy wrote it (the host name)
};

// The OCSF records of one completed audit row: its activity, then a finding when refused or
// reported; `finding_uid` is that finding's unique id.
std::vector<nlohmann::json> ocsf_records(const audit::AuditRecord& row, const Product& product,
                                         const std::string& finding_uid);
// An event an agent caused as a Detection Finding; netbox's own events (policy loads, audit
// store trouble) are not exported: an empty object.
nlohmann::json ocsf_event(const audit::Event& event, const Product& product, const std::string& finding_uid);

}  // namespace netbox::siem
