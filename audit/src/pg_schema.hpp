#pragma once
// A PostgreSQL audit store: connecting, bringing its schema to kSchemaVersion (the
// netbox_schema table), the day partitions of requests, and retention.
#include "netbox/audit/prune.hpp"
#include "pg.hpp"

#include <memory>
#include <string>

namespace netbox::audit::detail {

// Connects and migrates, one proxy at a time (an advisory lock), so that proxies starting
// together apply each step once. Throws DatabaseRejected for a database that holds other
// tables named like ours without netbox_schema, or a newer schema; std::runtime_error
// naming `address` when it cannot connect or migrate.
std::unique_ptr<PgConn> open_postgresql_for_writing(const std::string& address);
// Connects and checks the schema version (refusing a newer one or none).
std::unique_ptr<PgConn> open_postgresql_for_reading(const std::string& address);

// The partition of `day` ("2026-11-27": ts from that day's start to the next's), created
// unless it exists. Inside the caller's transaction (takes an advisory lock till its end).
void ensure_day_partition(PgConn& conn, const std::string& day);

// As prune_batch for SQLite (prune.hpp), in one transaction: day partitions that lie wholly
// before the cutoff and hold no row still open are dropped at once (their rows counted),
// the rest is deleted `limit` rows at a time.
PruneCounts pg_prune_batch(PgConn& conn, Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit);

}  // namespace netbox::audit::detail
