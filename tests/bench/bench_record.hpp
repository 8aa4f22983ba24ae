#pragma once
// The row both audit-store benchmarks write, one per request of B1's plain GET: what a
// real proxy's rows look like in size, with a client port that varies as real ones do.
#include "netbox/audit/record.hpp"

#include <cstdint>
#include <string>

namespace netbox::bench {

inline audit::AuditRecord sample_record(std::uint64_t i) {
  audit::AuditRecord r;
  r.ts = audit::Clock::now();
  r.agent = "bench";
  r.client_addr = "127.0.0.1:" + std::to_string(40000 + i % 20000);
  r.kind = "http";
  r.method = "GET";
  r.host = "127.0.0.1";
  r.port = 8080;
  r.path = "/small";
  r.resolved_addr = "127.0.0.1";
  r.decision = "allow";
  r.rule = "allow[0] 127.0.0.1";
  r.reason = "127.0.0.1 matches allow[0] 127.0.0.1";
  return r;
}

}  // namespace netbox::bench
