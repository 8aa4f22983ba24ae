#pragma once
// Retention: removing what is older than a cutoff, in small transactions so a live writer
// (the proxy's, or the writer thread itself) is never held up for long.
#include "netbox/audit/record.hpp"

#include <cstdint>
#include <filesystem>

struct sqlite3;

namespace netbox::audit {

struct PruneCounts {
  std::uint64_t requests = 0;
  std::uint64_t events = 0;
  std::uint64_t agents = 0;
  // The chain's starting point after the batch ("start": audit_chain_start, "anchors": each
  // proxy's anchor), JSON members for the audit_prune event's detail: verify takes them from
  // there, where the chain covers them, not from the tables (docs/audit.md "Retention").
  std::string chain;
  std::uint64_t total() const { return requests + events + agents; }
};

// Rows pruning removes, oldest first, for a cutoff:
// - requests before it that are complete (duration_ms set); one never completed (its
//   proxy died) goes only once it is twice as old as the cutoff's distance from now, so an
//   exchange still open at the cutoff keeps the row its completion will update;
// - events before it;
// - agents that ended before it (rows of running agents stay).
// At most `limit` rows per call, in one transaction. Returns what it removed; fewer than
// `limit` means nothing older is left. Only a batch that removed rows moves the audit
// chain's cutoff and anchors, so that each move is one an audit_prune event records.
PruneCounts prune_batch(sqlite3* db, Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit);

// `netbox audit prune`: batches until nothing older than `cutoff` is left, then records an
// `audit_prune` event with the counts; with `vacuum`, checkpoints the WAL and VACUUMs so the
// file shrinks. Runs beside a live proxy (its writes wait at most the busy timeout). The
// event is linked into the audit chain of this host's proxy id, signed with `signing_key`
// (an Ed25519 private key, PEM) when given.
PruneCounts prune(const std::filesystem::path& db, Clock::time_point cutoff, bool vacuum,
                  const std::filesystem::path& signing_key = {});

}  // namespace netbox::audit
