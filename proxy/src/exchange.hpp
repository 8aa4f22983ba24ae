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
#include "outcome.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace netbox::proxy {

class Exchange {
 public:
  // `metric_label`: the agent label its count carries (Server::Impl::metric_label);
  // `outcome`: the admission's, allow or report (the row's decision until finish).
  Exchange(Server::Impl& impl, audit::AuditRecord record, Outcome outcome, std::string metric_label);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Queues the row. False when the audit store refused it (the caller answers 503).
  bool open();
  // Completes the row, logs the canonical line, counts the request under its outcome and
  // its bytes. `failed`: netbox answered instead of the upstream (a DNS, dial or upstream
  // failure, a broken request body), so the outcome becomes error. Only the first call counts.
  void finish(std::optional<int> status, std::string error = {}, bool failed = false);

  audit::AuditRecord& record() { return record_; }
  // The queued row, for Writer::on_committed (--audit-sync). kNoRow before open().
  audit::RowHandle row() const { return row_; }
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  CapToken cap;
  ClientSlot client_slot;  // a tunnel's: the agent connection it took over from its session

 private:
  Server::Impl& impl_;
  audit::AuditRecord record_;
  Outcome outcome_;
  std::string metric_label_;
  audit::RowHandle row_ = audit::kNoRow;
  std::chrono::steady_clock::time_point started_;
  bool open_ = false;
  bool finished_ = false;
};

// For answers given without forwarding anything (denials, caps, malformed requests):
// one complete row, the log line and the counters, in one go.
// `outcome` is the row's decision (deny, cap or error).
void record_refusal(Server::Impl& impl, audit::AuditRecord record, Outcome outcome, const std::string& metric_label);

}  // namespace netbox::proxy
