#include "netbox/audit/prune.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "chain_stores.hpp"
#include "sqlite.hpp"
#include "write_store.hpp"

#include <string>

namespace netbox::audit {
namespace {

// Runs one DELETE whose ?1 is the cutoff, ?2 the row limit and ?3 (when given) the time
// before which a never-completed request counts as abandoned.
std::uint64_t delete_some(sqlite3* db, const char* sql, const std::string& cutoff, std::uint64_t limit,
                          const std::string* abandoned = nullptr) {
  detail::Statement s(db, sql);
  s.bind(1, cutoff);
  s.bind(2, static_cast<std::int64_t>(limit));
  if (abandoned) s.bind(3, *abandoned);
  s.step();
  return static_cast<std::uint64_t>(sqlite3_changes(db));
}

}  // namespace

PruneCounts prune_batch(sqlite3* db, Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit) {
  // Timestamps are TEXT in one fixed format, so they compare as strings.
  const std::string before = format_timestamp(cutoff);
  const std::string abandoned = format_timestamp(cutoff - (now - cutoff));
  PruneCounts n;
  detail::exec(db, "BEGIN IMMEDIATE");
  try {
    n.requests = delete_some(db,
                             "DELETE FROM requests WHERE id IN (SELECT id FROM requests WHERE ts < ?1 AND "
                             "(duration_ms IS NOT NULL OR ts < ?3) ORDER BY ts LIMIT ?2)",
                             before, limit, &abandoned);
    if (n.requests < limit)
      n.events = delete_some(db, "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ts < ?1 ORDER BY ts LIMIT ?2)",
                             before, limit - n.requests);
    if (n.total() < limit)
      n.agents = delete_some(db, "DELETE FROM agents WHERE id IN (SELECT id FROM agents WHERE ended IS NOT NULL "
                                 "AND ended < ?1 ORDER BY ended LIMIT ?2)",
                             before, limit - n.total());
    // A batch that removed nothing leaves the chain as it is: every move of its cutoff and
    // anchors is then one the run's audit_prune event records.
    const auto run = detail::sqlite_runner(db);
    if (n.total() > 0) detail::trim_chain(run, before);
    n.chain = detail::chain_record(run);
    detail::exec(db, "COMMIT");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return n;
}

namespace {

std::string prune_message(const PruneCounts& total, Clock::time_point cutoff) {
  return "pruned " + std::to_string(total.requests) + " requests, " + std::to_string(total.events) + " events and " +
         std::to_string(total.agents) + " agents from before " + format_timestamp(cutoff);
}

std::string prune_detail(const PruneCounts& total, Clock::time_point cutoff, bool vacuum) {
  return "{\"requests\":" + std::to_string(total.requests) + ",\"events\":" + std::to_string(total.events) +
         ",\"agents\":" + std::to_string(total.agents) + ",\"before\":\"" + format_timestamp(cutoff) +
         "\",\"vacuum\":" + (vacuum ? "true" : "false") + "," + total.chain + "}";
}

// The audit_prune event, written as the proxy's writer writes rows (so it gets its link in
// the audit chain, signed with `signing_key` when given).
void record_prune(const std::filesystem::path& path, const Event& event, const std::filesystem::path& signing_key) {
  WriterOptions options;
  options.db_path = path;
  options.signing_key = signing_key;
  const auto store = detail::open_write_store(options);
  store->begin();
  store->insert_event(event);
  store->commit();
}

// PostgreSQL: the same batches through the store's own writer. VACUUM is left to the
// server's autovacuum (a dropped day gives its space back at once).
PruneCounts prune_postgresql(const std::filesystem::path& path, Clock::time_point cutoff,
                             const std::filesystem::path& signing_key) {
  WriterOptions options;
  options.db_path = path;
  const auto store = detail::open_write_store(options);
  const auto now = Clock::now();
  PruneCounts total;
  for (;;) {
    const PruneCounts n = store->prune_batch(cutoff, now, 2000);
    total.requests += n.requests;
    total.events += n.events;
    total.agents += n.agents;
    total.chain = n.chain;
    if (n.total() < 2000) break;
  }
  record_prune(path, Event{Clock::now(), "audit_prune", prune_message(total, cutoff), prune_detail(total, cutoff, false)},
               signing_key);
  return total;
}

}  // namespace

PruneCounts prune(const std::filesystem::path& path, Clock::time_point cutoff, bool vacuum,
                  const std::filesystem::path& signing_key) {
  if (is_postgresql(path.native())) return prune_postgresql(path, cutoff, signing_key);
  detail::Db db(open_for_writing(path, false));
  constexpr std::uint64_t kBatch = 2000;  // a few ms per transaction: a live writer hardly waits
  const auto now = Clock::now();
  PruneCounts total;
  for (;;) {
    const PruneCounts n = prune_batch(db.get(), cutoff, now, kBatch);
    total.requests += n.requests;
    total.events += n.events;
    total.agents += n.agents;
    total.chain = n.chain;
    if (n.total() < kBatch) break;
  }
  record_prune(path, Event{Clock::now(), "audit_prune", prune_message(total, cutoff), prune_detail(total, cutoff, vacuum)},
               signing_key);
  if (vacuum) {
    detail::exec(db.get(), "VACUUM");
    detail::exec(db.get(), "PRAGMA wal_checkpoint(TRUNCATE)");
  }
  return total;
}

}  // namespace netbox::audit
