#pragma once
// The audit writer: one thread, a bounded queue, batched transactions.
// Callers on the proxy's io threads never block: enqueueing either succeeds at once
// or says the queue is full so the caller can refuse the connection (no silent drops).
#include "netbox/audit/record.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace netbox::audit {

struct WriterOptions {
  std::filesystem::path db_path = "netbox-audit.db";
  std::size_t queue_capacity = 65536;               // records + completions + events
  std::size_t max_batch = 4096;                     // rows per transaction at most
  std::chrono::milliseconds flush_interval{50};     // longest a queued row waits to commit
  bool synchronous_full = false;                    // PRAGMA synchronous=FULL instead of NORMAL
  std::chrono::milliseconds busy_timeout{5000};     // a write waits this long for another process's lock
  std::chrono::milliseconds shutdown_grace{10000};  // how long the destructor retries a failing store
};

struct WriterStats {
  std::size_t queue_depth = 0;
  std::uint64_t rows_written = 0;      // request rows inserted
  std::uint64_t completions_written = 0;
  std::uint64_t write_errors = 0;
  std::uint64_t batches = 0;
  bool healthy = true;                 // false while the store cannot write
  std::uint64_t rejected = 0;          // insert/complete/event/agent calls refused (queue full or unhealthy)
  std::uint64_t unknown_completions = 0;  // complete() for a handle the writer never saw (or completed twice)
  std::string last_error;              // the store's most recent write error, "" if none yet
};

// A handle to a queued request row, used to complete it later.
using RowHandle = std::uint64_t;
inline constexpr RowHandle kNoRow = 0;

class Writer {
 public:
  // Opens (creating and migrating) the database and starts the writer thread.
  // Throws std::runtime_error naming the path if the database cannot be opened.
  explicit Writer(WriterOptions options);
  ~Writer();  // drains the queue, then stops the thread
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Queue a row. Returns kNoRow if the queue is full or the store is unhealthy.
  RowHandle insert(AuditRecord record);
  // Queue a row that is final as it stands (a refusal answered at once): no handle, nothing
  // to complete later. Refused like insert() (false) when the queue is full or the store unhealthy.
  bool insert_complete(AuditRecord record);
  // Complete a row inserted earlier, once. Returns false if the queue is full.
  bool complete(RowHandle row, Completion completion);
  bool event(Event event);
  bool agent_started(AgentRecord agent);
  bool agent_exited(AgentExit exit);

  // Blocks until everything queued before the call is committed (or failed).
  // For shutdown, tests and --audit-sync; never call on an io thread.
  void flush();
  // Calls `fn` when a queued handle's row is durably committed (for --audit-sync).
  // `fn` runs on the writer thread; post back to an io_context from there, and never call
  // flush() from it. fn(false): the handle was never queued, or the row was lost at shutdown.
  void on_committed(RowHandle row, std::function<void(bool ok)> fn);

  WriterStats stats() const;
  bool healthy() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netbox::audit
