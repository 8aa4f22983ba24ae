#pragma once
// One audited exchange (a plain-HTTP request or a CONNECT tunnel): its row is inserted
// at decision time and completed exactly once at close, also when the connection dies
// or the proxy shuts down (the destructor completes it). It also holds the cap token, so
// the slot is given back when the exchange ends.
#include "netbox/audit/record.hpp"
#include "netbox/audit/writer.hpp"

#include "netbox/proxy/server.hpp"

#include "caps.hpp"
#include "client_slots.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace netbox::proxy {

class Exchange {
 public:
  // `metric_label`: the agent label its count carries (ProxyRuntime::metric_label).
  Exchange(ProxyRuntime& impl, audit::AuditRecord record, std::string metric_label);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Queues the row. False when the audit store refused it (the caller answers 503).
  bool open();
  // Completes the row, logs the canonical line, counts bytes. Only the first call counts.
  void finish(std::optional<int> status, std::string error = {});

  audit::AuditRecord& record() { return record_; }
  // The queued row, for Writer::on_committed (--audit-sync). kNoRow before open().
  audit::RowHandle row() const { return row_; }
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  CapToken cap;
  ClientSlot client_slot;  // a tunnel's: the agent connection it took over from its session

 private:
  ProxyRuntime& impl_;
  audit::AuditRecord record_;
  std::string metric_label_;
  audit::RowHandle row_ = audit::kNoRow;
  std::chrono::steady_clock::time_point started_;
  bool open_ = false;
  bool finished_ = false;
};

// For answers given without forwarding anything (denials, caps, malformed requests):
// one complete row, the log line and the counters, in one go.
void record_refusal(ProxyRuntime& impl, audit::AuditRecord record, const std::string& metric_label);

}  // namespace netbox::proxy
