#include "netbox/audit/writer.hpp"

#include "netbox/audit/printable.hpp"

#include "netbox/audit/schema.hpp"
#include "netbox/audit/stored_text.hpp"
#include "refusal_folder.hpp"
#include "spool.hpp"
#include "write_store.hpp"

#include "netbox/audit/prune.hpp"
#include "netbox/audit/query.hpp"

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
// A PostgreSQL store that failed this many attempts in a row (about 0.3 s with the backoff)
// is away, not blipping: its batches go to the spool.
constexpr std::uint64_t kSpoolAfterAttempts = 5;

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
    if (!options.spool_path.empty()) open_spool();
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
    if (!e.may_fold) return enqueue(std::move(e), true);
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
      // While the spool holds items, everything new goes behind them (order).
      if (spool && spool->items() > 0) {
        if (!spool_turn(lk, backoff)) return;
        continue;
      }
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
        if (should_spool() && spool_batch(lk, callbacks)) {
          // Held in the spool now; shipped once the server takes writes again.
        } else if (stopping) {
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

  // ---- the spool (a PostgreSQL store's, docs/audit.md "When the server is away") ----

  void open_spool() {
    spool = std::make_unique<detail::Spool>(options.spool_path, options.spool_max_bytes);
    // A spool left by an earlier run: its completions name that run's handles.
    next_handle = std::max<RowHandle>(next_handle, spool->max_handle() + 1);
    spool_unsure = spool->items() > 0;
    counters.spool_rows = spool->rows();
    counters.spool_bytes = spool->bytes();
  }

  // Caller holds `mu`. After a failed batch: move it to the spool now rather than hold it in
  // memory? Once the store has failed a few times (not a blip), when the memory queue is
  // full, when a caller waits for its row (--audit-sync: durable in the spool is its answer),
  // or at shutdown (the next start ships it).
  bool should_spool() const {
    if (!spool) return false;
    if (stopping || depth() >= options.queue_capacity || failed_attempts >= kSpoolAfterAttempts) return true;
    return std::any_of(batch.begin(), batch.end(), [](const Item& i) { return std::holds_alternative<CallbackItem>(i); });
  }

  // Caller holds `mu` (released while the file is written). Appends the batch to the spool
  // and answers what waited on it: callbacks (their rows are durable in the spool) and
  // flush markers. false, the batch kept in memory and new rows refused, when the spool is
  // full or cannot write: a row is never dropped.
  bool spool_batch(std::unique_lock<std::mutex>& lk, Callbacks& callbacks) {
    const bool first = spool->items() == 0;
    const std::string error = counters.last_error;
    lk.unlock();
    settle_origins(batch);
    std::vector<detail::SpoolItem> items;
    items.reserve(batch.size() + 1);
    if (first) items.push_back(spool_started(error));
    std::uint64_t ticket = 0;
    Callbacks answered;
    for (Item& item : batch) to_spool(item, items, answered, ticket);
    std::string why;
    try {
      if (!spool->append(items))
        why = "the audit spool " + spool->path().string() + " is full (" + std::to_string(spool->bytes()) + " of " +
              std::to_string(spool->max_bytes()) + " bytes, --audit-spool-size)";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      batch.clear();
      for (auto& a : answered) callbacks.push_back(std::move(a));
    }
    lk.lock();
    counters.spool_rows = spool->rows();
    counters.spool_bytes = spool->bytes();
    counters.spool_full = !why.empty();
    if (!why.empty()) {
      if (!spool_full_said) std::cerr << "netbox: " << why << "; refusing new requests until rows ship\n";
      spool_full_said = true;
      counters.last_error = why;
      healthy = false;
      update_room();
      return false;
    }
    spool_full_said = false;
    flushed_ticket = std::max(flushed_ticket, ticket);
    held_rows = 0;
    healthy = true;
    update_room();
    return true;
  }

  detail::SpoolItem spool_started(const std::string& error) const {
    std::cerr << "netbox: audit store " << options.db_path.string() << " cannot write (" << error
              << "); rows go to the spool " << spool->path().string() << " until it returns\n";
    nlohmann::json detail{{"spool", spool->path().string()}, {"store", options.db_path.string()}, {"error", error}};
    return Event{Clock::now(), "audit_spool_started",
                 "audit store cannot write (" + error + "); rows go to the local spool " + spool->path().string(),
                 detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }

  // One batch item as the spool keeps it; callbacks and flush markers are answered instead.
  // Writer thread (the row ids are its own).
  void to_spool(const Item& item, std::vector<detail::SpoolItem>& out, Callbacks& callbacks,
                std::uint64_t& ticket) const {
    if (const auto* in = std::get_if<InsertItem>(&item)) {
      AuditRecord r = in->record;
      r.origin_later = {};
      out.push_back(detail::SpooledInsert{in->handle, std::move(r)});
    } else if (const auto* done = std::get_if<CompleteItem>(&item)) {
      out.push_back(detail::SpooledComplete{done->handle, done->completion, known_rowid(done->handle)});
    } else if (const auto* e = std::get_if<Event>(&item)) {
      Event copy = *e;
      copy.ts = now_if_unset(copy.ts);
      out.push_back(std::move(copy));
    } else if (const auto* a = std::get_if<AgentRecord>(&item)) {
      AgentRecord copy = *a;
      copy.started = now_if_unset(copy.started);
      out.push_back(std::move(copy));
    } else if (const auto* x = std::get_if<AgentExit>(&item)) {
      AgentExit copy = *x;
      copy.ended = now_if_unset(copy.ended);
      out.push_back(std::move(copy));
    } else if (const auto* f = std::get_if<FlushItem>(&item)) {
      ticket = std::max(ticket, f->ticket);
    } else if (const auto* cb = std::get_if<CallbackItem>(&item)) {
      callbacks.emplace_back(cb->fn, cb->known);
    }
  }

  static Item from_spool(detail::SpoolItem&& item) {
    return std::visit(
        [](auto&& x) -> Item {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, detail::SpooledInsert>) return InsertItem{x.handle, std::move(x.record)};
          else if constexpr (std::is_same_v<T, detail::SpooledComplete>) return CompleteItem{x.handle, std::move(x.completion)};
          else return std::move(x);
        },
        std::move(item));
  }

  // Caller holds `mu` (released meanwhile). One turn while the spool holds items: ship its
  // oldest piece when the backoff allows, then put what was queued meanwhile behind the
  // rest. At shutdown it ships while the server takes it; once it does not, what is left
  // stays in the spool for the next start. false: the thread is done.
  bool spool_turn(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds& backoff) {
    if (!stopping && batch.empty() && queue.empty())
      work_cv.wait_until(lk, retry_at, [&] { return stopping || !queue.empty(); });
    else if (!stopping && !batch.empty())
      work_cv.wait_until(lk, retry_at, [&] { return stopping; });
    if (batch.empty()) take_items();
    urgent = false;
    const bool ship_now = stopping || SteadyClock::now() >= retry_at;
    lk.unlock();
    const bool shipped = !ship_now || ship_piece();
    lk.lock();
    if (ship_now && shipped) backoff = kFirstRetry;
    if (!shipped) {
      retry_at = SteadyClock::now() + backoff;
      backoff = std::min(backoff * 2, kLongestRetry);
    }
    Callbacks callbacks;
    // Emptied: the batch goes to the server as usual (the next turn of run()).
    if (spool->items() > 0 && !batch.empty() && !spool_batch(lk, callbacks)) release_flush_markers();
    const bool done = stopping && !shipped && spool->items() > 0 && spool_the_rest(lk, callbacks);
    lk.unlock();
    flushed_cv.notify_all();
    for (auto& [fn, result] : callbacks) fn(result);
    if (!done) wake_room_waiters();
    lk.lock();
    return !done;
  }

  // Caller holds `mu`. Shutdown with the server away: everything queued goes to the spool.
  // A full spool is retried until --audit-shutdown-wait has passed; then, as without a
  // spool, what is left is lost, loudly. true: nothing is left to do.
  bool spool_the_rest(std::unique_lock<std::mutex>& lk, Callbacks& callbacks) {
    while (!batch.empty() || !queue.empty()) {
      if (batch.empty()) take_items();
      if (!spool_batch(lk, callbacks)) break;
    }
    if (batch.empty() && queue.empty()) return true;
    if (spool_give_up_at == SteadyClock::time_point::max())
      spool_give_up_at = SteadyClock::now() + options.shutdown_grace;
    if (SteadyClock::now() < spool_give_up_at) {
      work_cv.wait_until(lk, std::min(retry_at, spool_give_up_at), [] { return false; });
      return false;
    }
    abandon_everything(callbacks);
    return true;
  }

  // Writer thread, no lock. The spool's oldest piece (max_batch rows at most) in one
  // transaction with its shipped-up-to marker, an audit_spool_shipped event naming the last
  // seq it holds: before each attempt that follows a failure, the marker says whether the
  // failed one committed after all (its answer lost), and what it shipped is dropped here
  // instead of being sent twice. Then the piece is dropped from the spool.
  bool ship_piece() {
    try {
      if (spool_unsure) {
        const std::uint64_t before = spool->items();
        const std::int64_t upto = store->shipped_upto(spool->key());
        if (upto > 0) spool->drop_through(upto);
        if (spool->items() != before) store->forget_retry();
        if (unconfirmed && unconfirmed->upto <= upto) adopt(*unconfirmed);
        unconfirmed.reset();
        spool_unsure = false;
      }
      if (spool->items() == 0) return spool_emptied();
    } catch (const std::exception& e) {
      note_failure(e.what());
      return false;
    }
    std::vector<detail::SpoolEntry> entries;
    try {
      entries = spool->head(options.max_batch);  // a file SQLite cannot read: retried, said
    } catch (const std::exception& e) {
      note_failure("the audit spool " + spool->path().string() + " cannot be read: " + e.what());
      return false;
    }
    const std::int64_t upto = entries.back().seq;
    std::vector<Item> piece;
    piece.reserve(entries.size() + 1);
    std::uint64_t rows = 0;
    for (auto& entry : entries) {
      rows += std::holds_alternative<detail::SpooledInsert>(entry.item);
      // A completion of a row committed in an earlier run: found by its id.
      if (const auto* c = std::get_if<detail::SpooledComplete>(&entry.item); c && c->row_id > 0)
        rowids.try_emplace(c->handle, c->row_id);
      piece.push_back(from_spool(std::move(entry.item)));
    }
    const std::uint64_t left = spool->rows() - rows;
    nlohmann::json detail{{"spool", spool->key()}, {"upto", upto}, {"rows", rows}, {"left", left},
                          {"path", spool->path().string()}};
    piece.push_back(Event{Clock::now(), "audit_spool_shipped",
                          "shipped " + std::to_string(rows) + " rows from the local spool " + spool->path().string() +
                              " (" + std::to_string(left) + " left)",
                          detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
    if (!write_items(piece, false)) {
      spool_unsure = true;
      unconfirmed = unconfirmed_piece(upto);
      return false;
    }
    Callbacks none;
    const Committed c = settle_committed(piece, none, rows > 0);
    try {
      spool->drop_through(upto);
    } catch (const std::exception&) {
      spool_unsure = true;  // the marker drops them before the next piece
    }
    std::lock_guard lk(mu);
    publish_counts(c);
    failing_since.reset();
    counters.spool_shipped += rows;
    counters.spool_rows = spool->rows();
    counters.spool_bytes = spool->bytes();
    counters.spool_full = false;
    return true;
  }

  // A piece whose commit's outcome is unknown (its answer lost): the ids its rows were
  // given. Should the marker say it committed, the piece is dropped from the spool rather
  // than shipped again, and its rows still open keep these ids, so that their completions,
  // still to come, find them (a store gives a retried piece the ids it gave before).
  struct UnconfirmedPiece {
    std::int64_t upto = 0;
    std::vector<std::pair<RowHandle, std::int64_t>> opened;
    std::vector<RowHandle> completed;
  };
  UnconfirmedPiece unconfirmed_piece(std::int64_t upto) const {
    UnconfirmedPiece u{upto, {}, {completed.begin(), completed.end()}};
    for (const auto& [handle, rowid] : tentative_rowids)
      if (!completed.contains(handle)) u.opened.emplace_back(handle, rowid);
    return u;
  }
  void adopt(const UnconfirmedPiece& u) {
    for (const auto& [handle, rowid] : u.opened) rowids.emplace(handle, rowid);
    for (RowHandle handle : u.completed) rowids.erase(handle);
    while (rowids.size() > kMostOpenRows) rowids.erase(rowids.begin());
  }

  // The row id a spooled completion carries, so that it completes its row after a restart
  // too: a committed row's, else one a piece whose outcome is still unknown gave it (should
  // that piece not have committed, its rows are shipped again before this completion, with
  // their ids, and it finds those first). 0 when none is known.
  std::int64_t known_rowid(RowHandle handle) const {
    if (auto it = rowids.find(handle); it != rowids.end()) return it->second;
    if (unconfirmed)
      for (const auto& [h, rowid] : unconfirmed->opened)
        if (h == handle) return rowid;
    return 0;
  }

  bool spool_emptied() {
    std::lock_guard lk(mu);
    counters.spool_rows = spool->rows();
    counters.spool_bytes = spool->bytes();
    return true;
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
      pruning.chain = n.chain;
      // The cutoff the chain's heads now hold: the last batch's that removed rows.
      if (n.total() > 0) pruning_before = format_timestamp(now - options.retention);
      done = n.total() < kPruneBatch;
      if (done && pruning.total() > 0) write_alone(prune_event());
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

  // The run's audit_prune event: its counts, and what verify takes from it (docs/audit.md
  // "Retention"): the cutoff the heads were given and the chain's starting point.
  Event prune_event() const {
    return Event{Clock::now(), "audit_prune",
                 "retention: pruned " + std::to_string(pruning.requests) + " requests, " +
                     std::to_string(pruning.events) + " events and " + std::to_string(pruning.agents) +
                     " agents older than " + std::to_string(options.retention.count()) + " s",
                 "{\"requests\":" + std::to_string(pruning.requests) + ",\"events\":" +
                     std::to_string(pruning.events) + ",\"agents\":" + std::to_string(pruning.agents) +
                     ",\"before\":\"" + pruning_before + "\"," + pruning.chain + "}"};
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
    // Only flush markers and callbacks: nothing to write, and they are answered as committed.
    if (held_rows == 0 && !failing_since) {
      write_items(batch, true);  // resets the per-batch maps
      return true;
    }
    return write_items(batch, false);
  }

  // `items` in one transaction (a batch, or a piece of the spool being shipped).
  bool write_items(std::vector<Item>& items, bool nothing) {
    tentative_rowids.clear();
    batch_rowids.clear();
    completed.clear();
    batch_unknown_completions = 0;
    if (nothing) return true;
    settle_origins(items);
    pair_completions(items);
    try {
      store->begin();
      if (failing_since) record_recovery();
      for (const Item& item : items) std::visit([this](const auto& x) { write(x); }, item);
      store->commit();
      return true;
    } catch (const std::exception& e) {
      store->abandon();
      note_failure(e.what());
      return false;
    }
  }

  // Each row's process, once: in place, so a batch retried writes the same answer.
  void settle_origins(std::vector<Item>& items) {
    const auto deadline = SteadyClock::now() + kOriginWait;
    for (Item& item : items) {
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
  void pair_completions(const std::vector<Item>& items) {
    paired.clear();
    for (const Item& item : items) {
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
      if (spool)
        std::cerr << "netbox: audit store " << options.db_path.string() << " cannot write (" << what
                  << "); retrying, then spooling to " << spool->path().string() << "\n";
      else
        std::cerr << "netbox: audit store " << options.db_path.string() << " cannot write (" << what
                  << "); holding up to " << options.held_while_failing
                  << " rows in memory and retrying, then refusing new requests\n";
    }
    ++failed_attempts;
    // With a spool, callers go on (back pressure at the queue's bound) until the spool is full.
    if (!spool || counters.spool_full) healthy = false;
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
  Committed settle_committed(Callbacks& callbacks) { return settle_committed(batch, callbacks, held_rows > 0); }
  Committed settle_committed(std::vector<Item>& items, Callbacks& callbacks, bool had_rows) {
    Committed c;
    for (auto& item : items) {
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
    c.counts_as_batch = had_rows || failing_since.has_value();
    return c;
  }

  // Caller holds `mu`.
  void publish_counts(const Committed& c) {
    if (c.counts_as_batch) ++counters.batches;
    counters.rows_written += c.rows;
    counters.completions_written += c.completions;
    counters.unknown_completions += c.unknown_completions;
    flushed_ticket = std::max(flushed_ticket, c.ticket);
  }

  // Caller holds `mu`.
  void publish(const Committed& c) {
    publish_counts(c);
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
  std::string pruning_before;  // see prune_event
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

  std::unique_ptr<detail::Spool> spool;  // PostgreSQL with a spool only; writer thread
  bool spool_unsure = false;  // a ship's outcome is unknown: ask the server's marker first
  std::optional<UnconfirmedPiece> unconfirmed;  // that ship's rows, when it was this process's
  bool spool_full_said = false;
  SteadyClock::time_point spool_give_up_at = SteadyClock::time_point::max();

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
