#pragma once
// The audit writer: one thread, a bounded queue, batched transactions.
// Callers on the proxy's io threads never block. A full queue is back pressure: has_room()
// says so and when_room() tells the caller when to go on, so a flood slows its sender
// down instead of losing rows or refusing others. A store that cannot write keeps what it
// accepted in memory, retrying with backoff, up to held_while_failing rows; only then are
// new rows refused (the proxy answers 503), and nothing accepted is dropped silently.
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

// The machine's host name: the default proxy_id of the rows a writer stores.
std::string default_proxy_id();

struct WriterOptions {
  // An SQLite file, or a PostgreSQL server's address (postgresql://..., store_address.hpp).
  std::filesystem::path db_path = "netbox-audit.db";
  // Stored with every row (requests, events, agents): which proxy wrote it. Empty: NULL.
  std::string proxy_id = default_proxy_id();
  std::size_t queue_capacity = 65536;               // rows queued before has_room() turns false
  // Rows accepted past queue_capacity before insert() refuses: callers that honour
  // has_room() overshoot by at most one row each, so this only stops one that does not.
  std::size_t queue_overflow = 16384;
  std::size_t held_while_failing = 16384;           // rows kept while the store fails, then refuse
  // Refusals (insert_complete) folded into counted rows, per agent and second: past
  // fold_after identical ones (agent, kind, decision, host, port, rule, reason, status),
  // one row with `count` stands for the rest; past agent_refusal_rows rows of its own,
  // further refusals of the agent fold into one row per decision with host "*".
  bool fold_refusals = true;
  std::uint32_t fold_after = 8;
  std::uint32_t agent_refusal_rows = 256;
  // Events an agent caused (Event::agent set), folded per agent and minute: past
  // event_fold_after identical ones (agent, kind, Event::fold_key), one row with `count`
  // stands for the rest; past agent_event_rows rows of its own, further events of the agent
  // fold into one row per kind whose detail says "*" for every particular but the agent.
  bool fold_events = true;
  std::uint32_t event_fold_after = 1;
  std::uint32_t agent_event_rows = 32;
  std::size_t max_batch = 4096;                     // rows per transaction at most
  std::chrono::milliseconds flush_interval{50};     // longest a queued row waits to commit
  // SQLite: PRAGMA synchronous=FULL instead of NORMAL; PostgreSQL: synchronous_commit on
  // instead of off (a commit is then on the server's disk before the writer reports it).
  bool synchronous_full = false;
  std::chrono::milliseconds busy_timeout{5000};     // a write waits this long for another process's lock
  // SQLite: at close, a WAL over this many pages is checkpointed into the database and
  // truncated (0: never; SQLite's own checkpoint at 1,000 pages is all). The first open of
  // the file re-reads the whole WAL to rebuild its index (the -shm does not survive the last
  // connection), so a store opened once per launch keeps the log short: every open pays for
  // what the log holds, the checkpoint only every few closes. Skipped, not waited for, while
  // another process reads.
  int wal_close_limit_pages = 0;
  std::chrono::milliseconds shutdown_grace{10000};  // how long the destructor retries a failing store
  // Retention: rows older than this are pruned (audit/prune.hpp) by the writer thread at
  // start and then every retention_interval, one small batch between its commits so
  // inserts never wait long. 0: keep everything.
  std::chrono::seconds retention{0};
  std::chrono::milliseconds retention_interval{std::chrono::hours(1)};
  // --audit-signing-key: an Ed25519 private key (PEM); the last chain link of every batch
  // is signed with it (docs/audit.md "Integrity"). Empty: links are not signed.
  std::filesystem::path signing_key;
  // PostgreSQL only: the local spool (docs/audit.md, "When the server is away"). While the
  // server cannot take the rows, batches go to this SQLite file instead of being refused,
  // and are shipped in order once it returns. Empty: no spool (rows are held in memory up to
  // held_while_failing, then refused). The caller checks the path (check_db_location).
  std::filesystem::path spool_path;
  std::uint64_t spool_max_bytes = std::uint64_t{256} << 20;  // the spool's items' bytes at most
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
  std::uint64_t folded = 0;            // refusals accounted for in counted rows instead of their own
  std::uint64_t events_folded = 0;     // agent-caused events accounted for in counted rows
  std::uint64_t room_waits = 0;        // when_room() calls that had to wait (back pressure)
  std::uint64_t pruned = 0;            // rows removed by retention
  std::uint64_t spool_rows = 0;        // request rows in the spool, not yet shipped
  std::uint64_t spool_bytes = 0;       // the bytes they (and the spooled events, completions) take
  std::uint64_t spool_shipped = 0;     // request rows shipped from the spool to the server
  bool spool_full = false;             // the spool refused a batch: new rows are refused (503)
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

  // Queue a row (agent-chosen text capped, see stored_text.hpp). Returns kNoRow when the
  // store is failing and already holds held_while_failing rows, or past the overflow.
  RowHandle insert(AuditRecord record);
  // Queue a row that is final as it stands (a refusal answered at once): no handle, nothing
  // to complete later. May be folded into a counted row (WriterOptions::fold_refusals).
  // Refused like insert() (false).
  bool insert_complete(AuditRecord record);
  // Complete a row inserted earlier, once. Never refused: there is one per accepted row.
  bool complete(RowHandle row, Completion completion);
  // Refused only past the overflow. An event with `agent` set may be folded into a counted
  // row (WriterOptions::fold_events); its text is capped like a request's.
  bool event(Event event);
  bool agent_started(AgentRecord agent);  // never refused
  bool agent_exited(AgentExit exit);      // never refused

  // False while the queue holds queue_capacity rows or more and the store is writing:
  // a caller about to produce rows should wait (when_room) before it reads more input.
  // True while the store fails, so callers go on and insert() refuses them at the bound.
  bool has_room() const;
  // Calls `fn` once has_room() is true: at once on this thread if it is already, else
  // later on the writer thread. `fn` must only post back to an io_context (cheap, no
  // blocking, no calls into the writer).
  void when_room(std::function<void()> fn);
  // Drops the callbacks still waiting for room, without calling them; later when_room()
  // calls drop theirs too. For shutdown, once no io thread runs any more: returns after
  // any callback in progress on the writer thread has finished.
  void cancel_room_waiters();

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
