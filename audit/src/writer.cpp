#include "netbox/audit/writer.hpp"

#include "netbox/audit/printable.hpp"

#include "netbox/audit/schema.hpp"
#include "netbox/audit/stored_text.hpp"
#include "refusal_folder.hpp"
#include "write_store.hpp"

#include "netbox/audit/prune.hpp"

#include <nlohmann/json.hpp>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace netbox::audit {

std::string default_proxy_id() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  // Printable UTF-8 whatever the host name holds, as --proxy-id must be (PostgreSQL).
  return escape_controls(name);
}

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstRetry{10};
constexpr std::chrono::milliseconds kLongestRetry{1000};
// Far more rows than a proxy keeps open at once (its connection caps are in the thousands).
constexpr std::size_t kMostOpenRows = 1 << 18;
// While refusals are being folded, the writer looks for counted rows whose second is over
// this often (otherwise it sleeps until there is work).
constexpr std::chrono::milliseconds kFoldSweep{100};
// The longest one batch waits for the answers of process lookups still under way
// (AuditRecord::origin_later); a row whose answer is later is written "unknown". The
// lookups are bounded themselves (proxy/src/agents/attribution.hpp), so this is seldom reached.
constexpr std::chrono::milliseconds kOriginWait{250};

struct InsertItem {
  RowHandle handle;
  AuditRecord record;
};
struct CompleteItem {
  RowHandle handle;
  Completion completion;
};
struct FlushItem {
  std::uint64_t ticket;
};
struct CallbackItem {
  RowHandle handle;
  bool known;  // the handle came from insert(); decided when registered
  std::function<void(bool)> fn;
};
using Item = std::variant<InsertItem, CompleteItem, Event, AgentRecord, AgentExit, FlushItem, CallbackItem>;

// Flush markers and commit callbacks ride along with the rows they follow; they are not
// rows, so they never fill the queue (a caller waiting for its row must always get an answer).
bool is_row(const Item& item) {
  return !std::holds_alternative<FlushItem>(item) && !std::holds_alternative<CallbackItem>(item);
}

using Callbacks = std::vector<std::pair<std::function<void(bool)>, bool>>;

Clock::time_point now_if_unset(Clock::time_point tp) { return tp == Clock::time_point{} ? Clock::now() : tp; }

}  // namespace

struct Writer::Impl {
  explicit Impl(WriterOptions opts)
      : options(std::move(opts)),
        store(detail::open_write_store(options)),
        folder(detail::kRefusalWindow, options.fold_after, options.agent_refusal_rows),
        event_folder(detail::kEventWindow, options.event_fold_after, options.agent_event_rows) {
    options.max_batch = std::max<std::size_t>(options.max_batch, 1);
    options.queue_capacity = std::max<std::size_t>(options.queue_capacity, 1);
    thread = std::thread([this] { run(); });
  }

  // ---- producer side: short critical sections, no I/O ----

  // Rows accepted and not yet committed.
  std::size_t depth() const { return queued_rows + held_rows; }

  // Caller holds `mu`. Whether a request row may be accepted now: a failing store holds
  // up to held_while_failing rows; a working one takes rows past queue_capacity only up
  // to the overflow (callers that honour has_room() stay well inside it).
  bool accepts_request_row() const {
    if (!healthy) return depth() < options.held_while_failing;
    return depth() < options.queue_capacity + options.queue_overflow;
  }

  // Caller holds `mu`. Keeps the lock-free answer of has_room() up to date.
  void update_room() { room.store(!healthy || depth() < options.queue_capacity, std::memory_order_release); }

  // Caller holds `mu`. Sets `wake` when the writer has something new to do: the first item
  // after idling, or a full batch (otherwise it sleeps out the flush interval on its own
  // and takes everything at once).
  void push(Item item, bool& wake) {
    const bool row = is_row(item);
    wake = wake || queue.empty();
    queue.push_back(std::move(item));
    if (row && ++queued_rows == options.max_batch) wake = true;
    if (row) update_room();
  }

  // Caller holds `mu`. Counted rows whose second is over (or all of them) join the queue.
  // They were accepted request by request already, so no bound refuses them now.
  void take_folds(bool all, bool& wake) {
    if (!folder.empty()) {
      due_folds.clear();
      folder.take_due(SteadyClock::now(), all, due_folds);
      for (auto& r : due_folds) push(InsertItem{kNoRow, std::move(r)}, wake);
      due_folds.clear();
    }
    if (!event_folder.empty()) {
      due_events.clear();
      event_folder.take_due(SteadyClock::now(), all, due_events);
      for (auto& e : due_events) push(std::move(e), wake);
      due_events.clear();
    }
  }

  bool folding() const { return !folder.empty() || !event_folder.empty(); }

  // An event an agent caused may be folded into a counted row (per agent, kind, fold_key and
  // minute); netbox's own events are rows of their own. Refused only past the overflow.
  bool event(Event e) {
    e.ts = now_if_unset(e.ts);
    e.count = std::max<std::uint64_t>(e.count, 1);
    if (e.agent.empty() || !options.fold_events) return enqueue(std::move(e), true);
    cap_agent_text(e);
    bool wake = false;
    bool folded = false;
    {
      std::lock_guard lk(mu);
      if (depth() >= options.queue_capacity + options.queue_overflow) {
        ++counters.rejected;
        return false;
      }
      const std::uint64_t n = e.count;
      due_events.clear();
      folded = event_folder.fold(e, SteadyClock::now(), due_events);
      for (auto& d : due_events) push(std::move(d), wake);
      due_events.clear();
      if (folded) counters.events_folded += n;
      else push(std::move(e), wake);
    }
    if (wake) work_cv.notify_one();
    return true;
  }

  // A new request row. With `completable`, it gets a handle for complete() and on_committed();
  // without, it is final as queued and any value but kNoRow means accepted.
  RowHandle insert(AuditRecord record, bool completable) {
    record.ts = now_if_unset(record.ts);
    // A final row may stand for several already (a summary its producer counted).
    record.count = completable ? 1 : std::max<std::uint64_t>(record.count, 1);
    const std::uint64_t stands_for = record.count;
    cap_agent_text(record);
    bool wake = false;
    RowHandle handle = kNoRow;
    {
      std::lock_guard lk(mu);
      if (!completable && options.fold_refusals) {
        due_folds.clear();
        const bool folded = folder.fold(record, SteadyClock::now(), due_folds);
        for (auto& r : due_folds) push(InsertItem{kNoRow, std::move(r)}, wake);
        due_folds.clear();
        if (folded) {
          counters.folded += stands_for;
          handle = 1;
        }
      }
      if (handle == kNoRow) {
        if (!accepts_request_row()) {
          ++counters.rejected;
          if (!healthy) ++refused_while_failing;
        } else {
          const RowHandle assigned = completable ? next_handle : kNoRow;
          push(InsertItem{assigned, std::move(record)}, wake);
          handle = completable ? next_handle++ : 1;
        }
      }
    }
    if (wake) work_cv.notify_one();
    return handle;
  }

  // Completions and agent rows are never refused: each follows an accepted row or a
  // launch, so their number is bounded by those. Events stop at the overflow.
  bool enqueue(Item item, bool refusable) {
    bool wake = false;
    {
      std::lock_guard lk(mu);
      if (refusable && depth() >= options.queue_capacity + options.queue_overflow) {
        ++counters.rejected;
        return false;
      }
      push(std::move(item), wake);
    }
    if (wake) work_cv.notify_one();
    return true;
  }

  bool has_room() const { return room.load(std::memory_order_acquire); }

  void when_room(std::function<void()> fn) {
    bool wait = true;
    {
      std::lock_guard lk(mu);
      if (room_waiters_cancelled) return;  // fn is dropped here, uncalled
      if (healthy && depth() >= options.queue_capacity) {
        ++counters.room_waits;
        room_waiters.push_back(std::move(fn));
        // Someone is held up: commit now rather than after the flush interval.
        urgent = true;
      } else {
        wait = false;
      }
    }
    if (wait) work_cv.notify_one();
    else fn();
  }

  // Writer thread, no lock held: runs the waiters once there is room.
  void wake_room_waiters() {
    std::lock_guard calling(room_call_mu);
    std::vector<std::function<void()>> ready;
    {
      std::lock_guard lk(mu);
      if (room_waiters.empty() || (healthy && depth() >= options.queue_capacity)) return;
      ready.swap(room_waiters);
    }
    for (auto& fn : ready) fn();
  }

  void cancel_room_waiters() {
    std::lock_guard calling(room_call_mu);
    std::vector<std::function<void()>> dropped;
    {
      std::lock_guard lk(mu);
      room_waiters_cancelled = true;
      dropped.swap(room_waiters);
    }
    // Destroyed here, outside the lock: they may own what waited.
  }

  void on_committed(RowHandle row, std::function<void(bool)> fn) {
    bool wake = false;
    {
      std::lock_guard lk(mu);
      const bool known = row != kNoRow && row < next_handle;
      push(CallbackItem{row, known, std::move(fn)}, wake);
      // Someone waits on this commit (--audit-sync): commit now rather than after the flush
      // interval. Rows queued while that commit runs go into the next one (group commit).
      urgent = true;
      wake = true;
    }
    if (wake) work_cv.notify_one();
  }

  void flush() {
    std::unique_lock lk(mu);
    const std::uint64_t ticket = next_ticket++;
    bool wake = false;
    take_folds(true, wake);  // everything accepted before the call, counted rows too
    queue.push_back(FlushItem{ticket});
    urgent = true;
    work_cv.notify_one();
    flushed_cv.wait(lk, [&] { return flushed_ticket >= ticket; });
  }

  WriterStats stats() const {
    std::lock_guard lk(mu);
    WriterStats s = counters;
    s.queue_depth = depth();
    s.healthy = healthy;
    return s;
  }

  bool is_healthy() const {
    std::lock_guard lk(mu);
    return healthy;
  }

  void stop() {
    {
      std::lock_guard lk(mu);
      stopping = true;
      urgent = true;
    }
    work_cv.notify_one();
    thread.join();
  }

  // ---- writer thread ----

  void run() {
    pthread_setname_np(pthread_self(), "netbox-audit");  // shows in top -H, perf and gdb
    std::unique_lock lk(mu);
    auto backoff = kFirstRetry;
    // Set once a failing store meets shutdown; max() means not yet.
    auto give_up_at = SteadyClock::time_point::max();
    for (;;) {
      bool ignored = false;
      take_folds(stopping, ignored);
      if (batch.empty() && !stopping) prune_if_due(lk);
      if (batch.empty()) {
        if (queue.empty()) {
          if (stopping) return;  // nothing left
          // Counted rows are due a second after their first request: look again soon.
          const auto wake = [&] { return stopping || !queue.empty(); };
          if (folding()) work_cv.wait_for(lk, kFoldSweep, wake);
          else if (options.retention.count() > 0) work_cv.wait_until(lk, next_prune, wake);
          else work_cv.wait(lk, wake);
          continue;
        }
        // Let the batch fill: up to max_batch rows, the flush interval, a flush() or shutdown.
        work_cv.wait_for(lk, options.flush_interval,
                         [&] { return urgent || stopping || queued_rows >= options.max_batch; });
      } else {
        // A failed batch is retried after its backoff, or at once when flush() asks.
        work_cv.wait_until(lk, retry_at, [&] { return urgent && !stopping; });
      }
      urgent = false;
      take_items();
      lk.unlock();
      const bool ok = write_batch();
      Callbacks callbacks;
      Committed committed;
      std::vector<Item> finished;  // freed outside the lock: thousands of rows take a while
      if (ok) {
        committed = settle_committed(callbacks);
        finished.swap(batch);
        batch.reserve(std::min<std::size_t>(options.max_batch, 4096));
      }
      lk.lock();
      if (ok) {
        publish(committed);
        backoff = kFirstRetry;
        give_up_at = SteadyClock::time_point::max();
      } else {
        release_flush_markers();
        retry_at = SteadyClock::now() + backoff;
        backoff = std::min(backoff * 2, kLongestRetry);
        if (stopping) {
          if (give_up_at == SteadyClock::time_point::max()) give_up_at = SteadyClock::now() + options.shutdown_grace;
          if (SteadyClock::now() >= give_up_at) {
            abandon_everything(callbacks);
            lk.unlock();
            flushed_cv.notify_all();
            for (auto& [fn, result] : callbacks) fn(result);
            return;
          }
        }
      }
      lk.unlock();
      flushed_cv.notify_all();
      // Outside the lock: a callback may call back into the writer.
      for (auto& [fn, result] : callbacks) fn(result);
      // Room again after a commit, or a store that fails (whose callers must now hear 503).
      wake_room_waiters();
      lk.lock();
    }
  }

  // Caller holds `mu` (released meanwhile). Retention: when due, one batch of at most
  // kPruneBatch rows; the loop writes queued rows before the next one, so a large prune
  // never holds inserts up for more than a batch. The run's counts become an event.
  void prune_if_due(std::unique_lock<std::mutex>& lk) {
    if (options.retention.count() == 0 || SteadyClock::now() < next_prune) return;
    constexpr std::uint64_t kPruneBatch = 2000;
    lk.unlock();
    bool done = true;
    try {
      const auto now = Clock::now();
      const PruneCounts n = store->prune_batch(now - options.retention, now, kPruneBatch);
      pruning.requests += n.requests;
      pruning.events += n.events;
      pruning.agents += n.agents;
      done = n.total() < kPruneBatch;
      if (done && pruning.total() > 0) write_alone(Event{Clock::now(), "audit_prune",
                                      "retention: pruned " + std::to_string(pruning.requests) + " requests, " +
                                          std::to_string(pruning.events) + " events and " +
                                          std::to_string(pruning.agents) + " agents older than " +
                                          std::to_string(options.retention.count()) + " s",
                                      "{\"requests\":" + std::to_string(pruning.requests) + ",\"events\":" +
                                          std::to_string(pruning.events) + ",\"agents\":" +
                                          std::to_string(pruning.agents) + "}"});
    } catch (const std::exception&) {
      // A store that cannot prune now (locked, full) is tried again next interval; the
      // rows it keeps meanwhile are only older than asked, never lost.
    }
    lk.lock();
    if (!done) return;
    counters.pruned += pruning.total();
    pruning = {};
    next_prune = SteadyClock::now() + options.retention_interval;
  }

  // Writer thread, no lock: an event of the writer's own, in a transaction of its own.
  void write_alone(const Event& e) {
    try {
      store->begin();
      store->insert_event(e);
      store->commit();
    } catch (...) {
      store->abandon();
      throw;
    }
  }

  // Caller holds `mu`. Moves queued items into the batch, at most max_batch rows in all.
  void take_items() {
    std::size_t taken = 0;
    while (taken < queue.size() && (held_rows < options.max_batch || !is_row(queue[taken]))) {
      if (is_row(queue[taken])) {
        --queued_rows;
        ++held_rows;
      }
      batch.push_back(std::move(queue[taken]));
      ++taken;
    }
    // Usually everything was taken and this keeps the vector's capacity for the next
    // items; only after a burst larger than max_batch do the rest move up.
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(taken));
  }

  // One transaction for the whole batch. Only this thread touches the connection.
  bool write_batch() {
    tentative_rowids.clear();
    batch_rowids.clear();
    completed.clear();
    batch_unknown_completions = 0;
    // Only flush markers and callbacks: nothing to write, and they are answered as committed.
    if (held_rows == 0 && !failing_since) return true;
    settle_origins();
    pair_completions();
    try {
      store->begin();
      if (failing_since) record_recovery();
      for (const Item& item : batch) std::visit([this](const auto& x) { write(x); }, item);
      store->commit();
      return true;
    } catch (const std::exception& e) {
      store->abandon();
      note_failure(e.what());
      return false;
    }
  }

  // Each row's process, once: in place, so a batch retried writes the same answer.
  void settle_origins() {
    const auto deadline = SteadyClock::now() + kOriginWait;
    for (Item& item : batch) {
      auto* in = std::get_if<InsertItem>(&item);
      if (!in || !in->record.origin_later.valid()) continue;
      auto& r = in->record;
      r.origin = ProcessOrigin{std::nullopt, "unknown", {}};
      try {
        if (r.origin_later.wait_until(deadline) == std::future_status::ready) r.origin = r.origin_later.get();
      } catch (const std::future_error&) {  // its lookup was dropped unanswered: unknown
      }
      r.origin_later = {};
      r.origin.exe = capped(std::move(r.origin.exe), kMaxStoredPath);
      r.origin.argv = capped(std::move(r.origin.argv), kMaxStoredPath);
    }
  }

  // Plain-HTTP requests usually end well inside one flush interval, so their completion
  // sits in the same batch as their insert: each such pair becomes one INSERT of the final
  // row instead of an INSERT and an UPDATE. Only the first completion after the insert is
  // taken (a second one stays unknown, as before); the batch itself is left as it is, so a
  // failed batch is retried from the same items.
  void pair_completions() {
    paired.clear();
    for (const Item& item : batch) {
      if (const auto* in = std::get_if<InsertItem>(&item); in && in->handle != kNoRow) {
        paired.emplace(in->handle, nullptr);
      } else if (const auto* done = std::get_if<CompleteItem>(&item)) {
        if (auto it = paired.find(done->handle); it != paired.end() && !it->second) it->second = &done->completion;
      }
    }
  }

  // The row id of a row still open (inserted, not completed): a tunnel's, for the
  // requests inside it. 0 when unknown (then parent_id stays NULL).
  std::int64_t rowid_of_open(RowHandle handle) const {
    if (handle == kNoRow) return 0;
    if (auto it = batch_rowids.find(handle); it != batch_rowids.end()) return it->second;
    if (auto it = rowids.find(handle); it != rowids.end()) return it->second;
    return 0;
  }

  void write(const InsertItem& x) {
    const Completion* final_values = nullptr;
    if (x.handle != kNoRow)
      if (auto it = paired.find(x.handle); it != paired.end()) final_values = it->second;
    const std::int64_t rowid = store->insert_request(x.record, final_values, rowid_of_open(x.record.parent));
    if (x.handle != kNoRow) batch_rowids[x.handle] = rowid;  // also when written final: parents
    if (final_values) completed.insert(x.handle);
    else if (x.handle != kNoRow) tentative_rowids[x.handle] = rowid;
  }

  void write(const CompleteItem& x) {
    // Already written with its insert.
    if (auto it = paired.find(x.handle); it != paired.end() && it->second == &x.completion) return;
    std::int64_t rowid = 0;
    if (auto it = tentative_rowids.find(x.handle); it != tentative_rowids.end()) rowid = it->second;
    else if (auto jt = rowids.find(x.handle); jt != rowids.end()) rowid = jt->second;
    if (rowid == 0 || completed.contains(x.handle) || !store->complete_request(rowid, x.completion)) {
      ++batch_unknown_completions;
      return;
    }
    completed.insert(x.handle);
  }

  void write(const Event& x) {
    Event e = x;
    e.ts = now_if_unset(e.ts);
    store->insert_event(e);
  }

  void write(const AgentRecord& x) {
    AgentRecord a = x;
    a.started = now_if_unset(a.started);
    store->insert_agent(a);
  }

  void write(const AgentExit& x) {
    AgentExit a = x;
    a.ended = now_if_unset(a.ended);
    store->agent_exited(a);
  }

  void write(const FlushItem&) {}
  void write(const CallbackItem&) {}

  // Both transitions are recorded when the store takes writes again, in the same
  // transaction as the rows that were held: while it fails, nothing can be written.
  void record_recovery() {
    std::uint64_t refused = 0;
    {
      std::lock_guard lk(mu);
      refused = refused_while_failing;
    }
    std::string message = "audit store cannot write: " + first_error;
    if (refused > 0)
      message += "; it held " + std::to_string(options.held_while_failing) + " rows, and " +
                 std::to_string(refused) + " new requests were refused meanwhile";
    nlohmann::json error_detail{{"path", options.db_path.string()},
                                {"error", first_error},
                                {"held_while_failing", options.held_while_failing},
                                {"refused", refused}};
    store->insert_event(Event{*failing_since, "audit_error", message,
                                  error_detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
    nlohmann::json recovered_detail{{"path", options.db_path.string()},
                                    {"failed_attempts", failed_attempts},
                                    {"held_rows", held_rows},
                                    {"refused", refused}};
    store->insert_event(Event{Clock::now(), "audit_recovered",
                                  "audit store writes again after " + std::to_string(failed_attempts) +
                                      " failed attempts; no rows were lost",
                                  recovered_detail.dump()});
  }

  void note_failure(const std::string& what) {
    std::lock_guard lk(mu);
    if (!failing_since) {
      failing_since = Clock::now();
      first_error = what;
      failed_attempts = 0;
      refused_while_failing = 0;
      // Said once per failure: the store cannot take the event until it recovers.
      std::cerr << "netbox: audit store " << options.db_path.string() << " cannot write (" << what
                << "); holding up to " << options.held_while_failing
                << " rows in memory and retrying, then refusing new requests\n";
    }
    ++failed_attempts;
    healthy = false;
    update_room();
    ++counters.write_errors;
    counters.last_error = what;
  }

  struct Committed {
    std::uint64_t rows = 0;
    std::uint64_t completions = 0;
    std::uint64_t unknown_completions = 0;
    std::uint64_t ticket = 0;  // the last flush() this batch answers
    bool counts_as_batch = false;
  };

  // Writer thread, no lock: the batch is committed; settle the handle map and collect
  // what callers are waiting for.
  Committed settle_committed(Callbacks& callbacks) {
    Committed c;
    for (auto& item : batch) {
      if (std::holds_alternative<InsertItem>(item)) ++c.rows;
      if (auto* f = std::get_if<FlushItem>(&item)) c.ticket = std::max(c.ticket, f->ticket);
      if (auto* cb = std::get_if<CallbackItem>(&item)) callbacks.emplace_back(std::move(cb->fn), cb->known);
    }
    // A row is completed once; forgetting it then keeps the map as small as the open connections.
    for (auto& [handle, rowid] : tentative_rowids)
      if (!completed.contains(handle)) rowids.emplace(handle, rowid);
    for (RowHandle handle : completed) rowids.erase(handle);
    // A caller that never completes its rows must not grow the map forever: past the bound,
    // the oldest open rows are forgotten (a late completion of one is then counted unknown).
    while (rowids.size() > kMostOpenRows) rowids.erase(rowids.begin());
    tentative_rowids.clear();
    c.completions = completed.size();
    c.unknown_completions = batch_unknown_completions;
    c.counts_as_batch = held_rows > 0 || failing_since.has_value();
    return c;
  }

  // Caller holds `mu`.
  void publish(const Committed& c) {
    if (c.counts_as_batch) ++counters.batches;
    counters.rows_written += c.rows;
    counters.completions_written += c.completions;
    counters.unknown_completions += c.unknown_completions;
    flushed_ticket = std::max(flushed_ticket, c.ticket);
    failing_since.reset();
    healthy = true;
    held_rows = 0;
    update_room();
  }

  // Caller holds `mu`. flush() promises an answer after one attempt, even a failed one.
  void release_flush_markers() {
    std::erase_if(batch, [this](const Item& item) {
      if (auto* f = std::get_if<FlushItem>(&item)) {
        flushed_ticket = std::max(flushed_ticket, f->ticket);
        return true;
      }
      return false;
    });
  }

  // Caller holds `mu`. Shutdown with a store that stayed broken for the whole grace period:
  // say loudly what is lost instead of hanging the process forever.
  void abandon_everything(Callbacks& callbacks) {
    for (auto& item : queue) batch.push_back(std::move(item));
    queue.clear();
    std::uint64_t lost = 0;
    for (auto& item : batch) {
      if (is_row(item)) ++lost;
      if (auto* f = std::get_if<FlushItem>(&item)) flushed_ticket = std::max(flushed_ticket, f->ticket);
      if (auto* cb = std::get_if<CallbackItem>(&item)) callbacks.emplace_back(std::move(cb->fn), false);
    }
    std::cerr << "netbox: audit store " << options.db_path.string() << " still cannot write after "
              << options.shutdown_grace.count() << " ms at shutdown; " << lost
              << " queued audit rows are lost: " << counters.last_error << "\n";
    batch.clear();
    queued_rows = 0;
    held_rows = 0;
    update_room();
  }

  WriterOptions options;
  std::unique_ptr<detail::WriteStore> store;
  detail::RefusalFolder folder;  // under `mu`
  detail::EventFolder event_folder;  // under `mu`
  std::vector<AuditRecord> due_folds;  // scratch, under `mu`
  std::vector<Event> due_events;       // scratch, under `mu`

  mutable std::mutex mu;
  std::condition_variable work_cv;     // the writer waits for items
  std::condition_variable flushed_cv;  // flush() waits for its ticket
  // A vector, not a deque: an Item is a few hundred bytes, so a deque would allocate a
  // block per item; this one keeps its capacity from batch to batch.
  std::vector<Item> queue;
  std::size_t queued_rows = 0;  // rows in `queue`
  std::size_t held_rows = 0;    // rows in `batch` (taken, not yet committed)
  RowHandle next_handle = 1;
  std::uint64_t next_ticket = 1;
  std::uint64_t flushed_ticket = 0;
  bool stopping = false;
  bool urgent = false;
  bool healthy = true;
  std::uint64_t refused_while_failing = 0;
  WriterStats counters;
  std::atomic<bool> room{true};
  std::vector<std::function<void()>> room_waiters;  // under `mu`
  bool room_waiters_cancelled = false;
  std::mutex room_call_mu;  // held while waiters run, so cancel_room_waiters() can wait them out

  // Writer thread only (read under `mu` where noted above).
  std::vector<Item> batch;
  SteadyClock::time_point retry_at{};
  SteadyClock::time_point next_prune{};  // retention: due at once, then every retention_interval
  PruneCounts pruning;                   // the current retention run, summed over its batches
  std::map<RowHandle, std::int64_t> rowids;  // committed, not yet completed; oldest first
  std::unordered_map<RowHandle, std::int64_t> tentative_rowids;  // inserted in the open transaction
  // Every row inserted in the open transaction, completed or not: a tunnel opened and
  // closed within one batch is still the parent of the requests inserted after it.
  std::unordered_map<RowHandle, std::int64_t> batch_rowids;
  std::unordered_set<RowHandle> completed;                       // completed in the open transaction
  std::unordered_map<RowHandle, const Completion*> paired;       // batch inserts -> their completion, if queued
  std::uint64_t batch_unknown_completions = 0;
  std::optional<Clock::time_point> failing_since;
  std::string first_error;
  std::uint64_t failed_attempts = 0;

  std::thread thread;  // last: starts after every member above exists
};

Writer::Writer(WriterOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Writer::~Writer() {
  impl_->stop();
  impl_->cancel_room_waiters();
}

RowHandle Writer::insert(AuditRecord record) { return impl_->insert(std::move(record), true); }

bool Writer::insert_complete(AuditRecord record) { return impl_->insert(std::move(record), false) != kNoRow; }

bool Writer::complete(RowHandle row, Completion completion) {
  cap_agent_text(completion);
  return impl_->enqueue(CompleteItem{row, std::move(completion)}, false);
}

bool Writer::event(Event event) { return impl_->event(std::move(event)); }

bool Writer::agent_started(AgentRecord agent) { return impl_->enqueue(std::move(agent), false); }

bool Writer::agent_exited(AgentExit exit) { return impl_->enqueue(std::move(exit), false); }

bool Writer::has_room() const { return impl_->has_room(); }

void Writer::when_room(std::function<void()> fn) { impl_->when_room(std::move(fn)); }

void Writer::cancel_room_waiters() { impl_->cancel_room_waiters(); }

void Writer::flush() { impl_->flush(); }

void Writer::on_committed(RowHandle row, std::function<void(bool ok)> fn) { impl_->on_committed(row, std::move(fn)); }

WriterStats Writer::stats() const { return impl_->stats(); }

bool Writer::healthy() const { return impl_->is_healthy(); }

}  // namespace netbox::audit
