#pragma once
// The SIEM export (`--export`): completed audit rows and agent events, as OCSF records
// (ocsf.hpp), to each sink. The proxy's threads only copy the value into a bounded queue of
// the export thread (row(), event(): no I/O, no waiting); when the queue is full the record
// is dropped for every sink and counted (SinkStats::dropped, netbox_export_dropped_total).
// The audit store stays the record of truth; the export is a copy that may lose records
// under overload, and says how many.
#include "netbox/audit/record.hpp"
#include "netbox/export/ocsf.hpp"
#include "netbox/export/sink_spec.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace netbox::siem {

struct ExporterOptions {
  Product product;
  std::size_t queue_capacity = 16384;   // records waiting for the export thread
  std::size_t otlp_buffer = 8192;       // records an OTLP sink holds while its receiver is slow or down
  std::size_t otlp_batch = 512;         // records per POST
  std::chrono::milliseconds otlp_timeout{5000};  // one POST: resolve, connect, send, answer
  unsigned otlp_attempts = 4;           // a batch is dropped after this many failed POSTs
  std::chrono::milliseconds otlp_backoff_first{100};
  std::chrono::milliseconds otlp_backoff_max{2000};
  std::chrono::milliseconds shutdown_wait{2000};  // how long the destructor lets queued records be delivered
};

struct SinkStats {
  std::string sink;            // as given to --export
  std::uint64_t exported = 0;  // records written or accepted by the receiver
  std::uint64_t dropped = 0;   // records lost: queue or buffer full, receiver failing, disk full
};

class Exporter {
 public:
  // Opens every sink (a JSONL file is created now) and starts the export thread. Throws
  // std::runtime_error naming the sink and why it cannot be opened.
  Exporter(std::vector<SinkSpec> sinks, ExporterOptions options);
  // Lets the sinks deliver what is queued for at most shutdown_wait, then stops: what is
  // still queued or held then is counted dropped, not waited for.
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // A completed row (or a refusal written whole). Never blocks.
  void row(const audit::AuditRecord& row);
  // An event; only those an agent caused are exported (ocsf_event). Never blocks.
  void event(const audit::Event& event);
  // Reopens JSONL files by their paths (logrotate moved them; SIGHUP).
  void reopen();
  std::vector<SinkStats> stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netbox::siem
