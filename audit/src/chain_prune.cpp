#include "chain.hpp"

namespace netbox::audit::detail {

void trim_chain(const RunSql& run, const std::string& before) {
  run("UPDATE audit_chain_heads SET pruned_before = ?1 WHERE pruned_before < ?1", {before});
  for (const auto& head : run("SELECT proxy_id, anchor_seq FROM audit_chain_heads", {})) {
    const std::string& proxy = head.at(0);
    // The first link still needed: young enough to be kept, or its row is still there. An
    // ordered scan of the key that stops there: it costs the links it drops.
    auto needed = run(
        "SELECT seq FROM audit_chain c WHERE c.proxy_id = ?1 AND (c.ts >= ?2 "
        "OR (c.tbl = 'requests' AND EXISTS (SELECT 1 FROM requests r WHERE r.id = c.row_id)) "
        "OR (c.tbl = 'events' AND EXISTS (SELECT 1 FROM events e WHERE e.id = c.row_id)) "
        "OR (c.tbl = 'agents' AND EXISTS (SELECT 1 FROM agents a WHERE a.id = c.row_id))) "
        "ORDER BY seq LIMIT 1",
        {proxy, before});
    std::int64_t cut = 0;
    if (!needed.empty()) {
      cut = std::stoll(needed[0][0]) - 1;
    } else {
      auto last = run("SELECT MAX(seq) FROM audit_chain WHERE proxy_id = ?1", {proxy});
      if (last.empty() || last[0][0].empty()) continue;
      cut = std::stoll(last[0][0]);
    }
    if (cut <= std::stoll(head.at(1))) continue;
    auto hash = run("SELECT hash FROM audit_chain WHERE proxy_id = ?1 AND seq = ?2", {proxy, std::to_string(cut)});
    if (hash.empty()) continue;  // a gap: left for verify to report
    run("DELETE FROM audit_chain WHERE proxy_id = ?1 AND seq <= ?2", {proxy, std::to_string(cut)});
    run("UPDATE audit_chain_heads SET anchor_seq = ?2, anchor_hash = ?3 WHERE proxy_id = ?1",
        {proxy, std::to_string(cut), hash[0][0]});
  }
}

}  // namespace netbox::audit::detail
