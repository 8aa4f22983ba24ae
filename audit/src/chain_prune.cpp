#include "chain.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace netbox::audit::detail {
namespace {

// Whether any row of `members` is still needed: young enough to be kept, or still there.
bool batch_needed(const RunSql& run, const std::vector<Member>& members, const std::string& before) {
  std::map<const ChainedTable*, std::string> ids;  // per table, the ids of rows old enough to be gone
  for (const auto& m : members) {
    if (m.ts >= before) return true;
    auto& list = ids[m.table];
    list += (list.empty() ? "" : ",") + std::to_string(m.id);
  }
  // Integers only: spliced into the statement, one per table per batch.
  for (const auto& [table, list] : ids)
    if (!run(std::string("SELECT 1 FROM ") + table->name + " WHERE id IN (" + list + ") LIMIT 1", {}).empty())
      return true;
  return false;
}

struct Cut {
  std::int64_t seq = 0;
  std::string hash;  // hex
};

// The last version-8 link (one per row) of `proxy` that is no longer needed; `done` when
// every such link is (the cut may then go on into the batches after them).
Cut row_links_cut(const RunSql& run, const std::string& proxy, const std::string& before, bool& done) {
  // The first link still needed: young enough to be kept, or its row is still there. An
  // ordered scan of the key that stops there: it costs the links it drops.
  auto needed = run(
      "SELECT seq FROM audit_chain c WHERE c.proxy_id = ?1 AND (c.ts >= ?2 "
      "OR (c.tbl = 'requests' AND EXISTS (SELECT 1 FROM requests r WHERE r.id = c.row_id)) "
      "OR (c.tbl = 'events' AND EXISTS (SELECT 1 FROM events e WHERE e.id = c.row_id)) "
      "OR (c.tbl = 'agents' AND EXISTS (SELECT 1 FROM agents a WHERE a.id = c.row_id))) "
      "ORDER BY seq LIMIT 1",
      {proxy, before});
  done = needed.empty();
  auto last = done ? run("SELECT MAX(seq) FROM audit_chain WHERE proxy_id = ?1", {proxy})
                   : run("SELECT MAX(seq) FROM audit_chain WHERE proxy_id = ?1 AND seq < ?2", {proxy, needed[0][0]});
  if (last.empty() || last[0][0].empty()) return {};
  auto hash = run("SELECT hash FROM audit_chain WHERE proxy_id = ?1 AND seq = ?2", {proxy, last[0][0]});
  if (hash.empty()) return {};
  return {std::stoll(last[0][0]), hash[0][0]};
}

// The cut moved on over the batches of `proxy` after `from` whose rows are all gone, read a
// page at a time (a batch holds thousands of members).
Cut batches_cut(const RunSql& run, const std::string& proxy, const std::string& before, Cut from) {
  for (;;) {
    auto page = run("SELECT seq, ts, members, hash FROM audit_chain_batches WHERE proxy_id = ?1 AND seq > ?2 "
                    "ORDER BY seq LIMIT 16",
                    {proxy, std::to_string(from.seq)});
    for (const auto& b : page) {
      if (b.at(1) >= before) return from;  // its newest row is to be kept
      const auto members = decode_members(b.at(2));
      if (!members || batch_needed(run, *members, before)) return from;  // a bad list: left for verify
      const std::string& hash = b.at(3);
      from = {std::stoll(b.at(0)), to_hex(std::span(reinterpret_cast<const unsigned char*>(hash.data()), hash.size()))};
    }
    if (page.size() < 16) return from;
  }
}

}  // namespace

void trim_chain(const RunSql& run, const std::string& before) {
  run("UPDATE audit_chain_heads SET pruned_before = ?1 WHERE pruned_before < ?1", {before});
  for (const auto& head : run("SELECT proxy_id, anchor_seq FROM audit_chain_heads", {})) {
    const std::string& proxy = head.at(0);
    const std::int64_t anchor = std::stoll(head.at(1));
    bool rows_done = false;
    Cut cut = row_links_cut(run, proxy, before, rows_done);
    if (rows_done) cut = batches_cut(run, proxy, before, cut.seq > anchor ? cut : Cut{anchor, {}});
    if (cut.seq <= anchor || cut.hash.empty()) continue;
    run("DELETE FROM audit_chain WHERE proxy_id = ?1 AND seq <= ?2", {proxy, std::to_string(cut.seq)});
    run("DELETE FROM audit_chain_batches WHERE proxy_id = ?1 AND seq <= ?2", {proxy, std::to_string(cut.seq)});
    run("UPDATE audit_chain_heads SET anchor_seq = ?2, anchor_hash = ?3 WHERE proxy_id = ?1",
        {proxy, std::to_string(cut.seq), cut.hash});
  }
}

std::string chain_record(const RunSql& run) {
  auto start = nlohmann::ordered_json::object(), anchors = nlohmann::ordered_json::object();
  for (const auto& r : run("SELECT tbl, last_id FROM audit_chain_start ORDER BY tbl", {}))
    start[r.at(0)] = std::stoll(r.at(1));
  // Only moved anchors: a proxy not named starts at link 1 (verify holds it to that).
  for (const auto& r : run("SELECT proxy_id, anchor_seq, anchor_hash FROM audit_chain_heads WHERE anchor_seq > 0 "
                           "ORDER BY proxy_id",
                           {}))
    anchors[r.at(0)] = nlohmann::ordered_json::array({std::stoll(r.at(1)), r.at(2)});
  return "\"start\":" + start.dump() + ",\"anchors\":" + anchors.dump();
}

}  // namespace netbox::audit::detail
