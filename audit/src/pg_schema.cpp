#include "pg_schema.hpp"

#include "chain_stores.hpp"
#include "migrations.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"

#include <chrono>
#include <cstdio>
#include <functional>

namespace netbox::audit::detail {
namespace {

// Advisory lock keys (any bigint; the same in every netbox): migrations, partitions, pruning.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7346101)";
constexpr const char* kPartitionLock = "SELECT pg_advisory_xact_lock(7346102)";
constexpr const char* kPruneLock = "SELECT pg_advisory_xact_lock(7346103)";

std::unique_ptr<PgConn> connect(const std::string& address) {
  // Every message below names the address: one with a password is refused before any.
  check_postgresql_address(address, "the audit store's address");
  try {
    return std::make_unique<PgConn>(address);
  } catch (const PgError& e) {
    throw std::runtime_error("cannot open audit store " + address + ": " + e.what());
  }
}

bool exists(PgConn& conn, const char* relation) {
  auto r = conn.query("SELECT to_regclass($1) IS NOT NULL", {std::string(relation)});
  return pg_value(r.get(), 0, 0) == "t";
}

int stored_version(PgConn& conn) {
  if (!exists(conn, "netbox_schema")) return 0;
  auto r = conn.query("SELECT COALESCE(MAX(version), 0) FROM netbox_schema");
  return std::stoi(pg_value(r.get(), 0, 0));
}

void refuse_newer(int version, const std::string& address) {
  if (version > kSchemaVersion)
    throw DatabaseRejected(address + " has audit schema version " + std::to_string(version) + ", newer than the version " +
                           std::to_string(kSchemaVersion) + " this netbox understands; use a newer netbox to read or write it");
}

void migrate(PgConn& conn, const std::string& address) {
  conn.exec("BEGIN");
  try {
    conn.exec(kMigrationLock);
    const int current = stored_version(conn);
    refuse_newer(current, address);
    if (current == 0 && exists(conn, "requests"))
      throw DatabaseRejected(address + " has a table requests but no netbox_schema: not a netbox audit database");
    for (const auto& step : migrations()) {
      if (step.version <= current || !step.postgresql) continue;
      conn.exec(step.postgresql);
      if (step.views) conn.exec(views_sql());
      conn.exec("DELETE FROM netbox_schema; INSERT INTO netbox_schema (version) VALUES (" +
                std::to_string(step.version) + ")");
    }
    conn.exec("COMMIT");
  } catch (const DatabaseRejected&) {
    conn.rollback();
    throw;
  } catch (const std::exception& e) {
    conn.rollback();
    throw std::runtime_error("cannot migrate audit store " + address + " to schema version " +
                             std::to_string(kSchemaVersion) + ": " + e.what());
  }
}

std::string next_day(const std::string& day) {
  int y = 0;
  unsigned m = 0, d = 0;
  std::sscanf(day.c_str(), "%d-%u-%u", &y, &m, &d);
  const std::chrono::sys_days next = std::chrono::sys_days{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}} +
                                     std::chrono::days{1};
  const std::chrono::year_month_day ymd{next};
  char out[16];
  std::snprintf(out, sizeof out, "%04d-%02u-%02u", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()));
  return out;
}

bool is_day(const std::string& day) {
  if (day.size() != 10 || day[4] != '-' || day[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (day[i] < '0' || day[i] > '9') return false;
  return true;
}

std::string partition_name(const std::string& day) {
  return "requests_p" + day.substr(0, 4) + day.substr(5, 2) + day.substr(8, 2);
}

std::uint64_t changed(const PgResult& r) {
  const char* n = PQcmdTuples(r.get());
  return n && *n ? std::stoull(n) : 0;
}

}  // namespace

std::unique_ptr<PgConn> open_postgresql_for_writing(const std::string& address) {
  auto conn = connect(address);
  migrate(*conn, address);
  return conn;
}

std::unique_ptr<PgConn> open_postgresql_for_reading(const std::string& address) {
  auto conn = connect(address);
  int version = 0;
  try {
    version = stored_version(*conn);
  } catch (const PgError& e) {
    throw std::runtime_error("cannot read audit store " + address + ": " + e.what());
  }
  refuse_newer(version, address);
  if (version == 0) throw DatabaseRejected(address + " is not a netbox audit database (no netbox_schema table)");
  return conn;
}

void ensure_day_partition(PgConn& conn, const std::string& day) {
  if (!is_day(day)) throw PgError("not a day: " + day);  // never: the writer formats ts itself
  conn.exec(kPartitionLock);
  conn.exec("CREATE TABLE IF NOT EXISTS " + partition_name(day) + " PARTITION OF requests FOR VALUES FROM ('" + day +
            "') TO ('" + next_day(day) + "')");
}

PruneCounts pg_prune_batch(PgConn& conn, Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit) {
  const std::string before = format_timestamp(cutoff);
  const std::string abandoned = format_timestamp(cutoff - (now - cutoff));
  PruneCounts counts;
  conn.exec("BEGIN");
  try {
    conn.exec(kPruneLock);
    // Whole days first: a partition whose day ended by the cutoff, with no open row young
    // enough to be kept (see prune.hpp), goes with one DROP.
    auto parts = conn.query(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'requests'::regclass AND c.relname ~ '^requests_p[0-9]{8}$' ORDER BY c.relname");
    for (int i = 0; i < PQntuples(parts.get()); ++i) {
      const std::string name = pg_value(parts.get(), i, 0);
      const std::string day = name.substr(10, 4) + "-" + name.substr(14, 2) + "-" + name.substr(16, 2);
      if (next_day(day) > before.substr(0, 10)) break;
      auto r = conn.query("SELECT COUNT(*), COUNT(*) FILTER (WHERE duration_ms IS NULL AND ts >= $1) FROM " + name,
                          {abandoned});
      if (pg_value(r.get(), 0, 1) != "0") continue;
      counts.requests += std::stoull(pg_value(r.get(), 0, 0));
      conn.exec("DROP TABLE " + name);
    }
    if (counts.requests < limit) {
      auto r = conn.query(
          "DELETE FROM requests WHERE (id, ts) IN (SELECT id, ts FROM requests WHERE ts < $1 AND "
          "(duration_ms IS NOT NULL OR ts < $3) ORDER BY ts LIMIT $2)",
          {before, std::to_string(limit - counts.requests), abandoned});
      counts.requests += changed(r);
    }
    if (counts.total() < limit) {
      auto r = conn.query("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ts < $1 ORDER BY ts LIMIT $2)",
                          {before, std::to_string(limit - counts.total())});
      counts.events = changed(r);
    }
    if (counts.total() < limit) {
      auto r = conn.query("DELETE FROM agents WHERE id IN (SELECT id FROM agents WHERE ended IS NOT NULL AND "
                          "ended < $1 ORDER BY ended LIMIT $2)",
                          {before, std::to_string(limit - counts.total())});
      counts.agents = changed(r);
    }
    // As prune_batch in prune.cpp: only a batch that removed rows moves the chain's start.
    const auto run = pg_runner(conn);
    if (counts.total() > 0) trim_chain(run, before);
    counts.chain = chain_record(run);
    conn.exec("COMMIT");
  } catch (...) {
    conn.rollback();
    throw;
  }
  return counts;
}

}  // namespace netbox::audit::detail
