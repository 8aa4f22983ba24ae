#include "netbox/audit/verify.hpp"

#include "netbox/audit/query.hpp"
#include "chain.hpp"
#include "reader.hpp"
#include "timestamp.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <stdexcept>

namespace netbox::audit {
namespace {

using detail::Link;
using detail::Row;

struct Head {
  std::int64_t seq = 0;
  std::string hash;
  std::int64_t anchor_seq = 0;
  std::string anchor_hash;
  std::string pruned_before;
};

// What an audit_prune event the chain covers says (docs/audit.md "Retention"): the cutoff it
// gave the heads and, since netbox records them, the chain's starting point after it.
struct PruneRecord {
  std::int64_t event_id = 0;
  std::string ts;
  std::string before;  // "": a retention run from before netbox recorded it
  bool chained = false;  // "start" and "anchors" recorded
  std::map<std::string, std::int64_t> start;
  std::map<std::string, std::pair<std::int64_t, std::string>> anchors;
};

std::optional<PruneRecord> parse_record(std::int64_t id, std::string ts, const std::string& detail) {
  const auto j = nlohmann::json::parse(detail, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  PruneRecord r{id, std::move(ts), {}, false, {}, {}};
  try {
    if (j.contains("before")) r.before = j["before"].get<std::string>();
    if (!j.contains("start") || !j.contains("anchors")) return r;
    r.chained = true;
    for (const auto& [tbl, last_id] : j["start"].items()) r.start[tbl] = last_id.get<std::int64_t>();
    for (const auto& [proxy, a] : j["anchors"].items())
      r.anchors[proxy] = {a.at(0).get<std::int64_t>(), a.at(1).get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // covered by the chain, so written so by netbox: not a record
  }
  return r;
}

// The time by which a prune deletes `row` if it is older than the cutoff; nullopt for a row
// no prune deletes whatever its age (a running agent, a request not completed: prune.hpp).
// A request counts only when it was complete before `cutoff` too: one still open at the
// prune (kept) and completed since is older than the cutoff yet rightly there.
std::optional<std::string> prunable_at(const detail::ChainedTable& table, const Row& row, const std::string& cutoff) {
  const std::string_view name = table.name;
  if (name == "events") return row.column_text(1);
  if (name == "agents") return row.is_null(7) ? std::nullopt : std::optional(row.column_text(7));
  if (row.is_null(16)) return std::nullopt;  // requests: duration_ms
  const auto start = detail::parse_iso8601(row.column_text(1));
  if (!start || format_timestamp(*start + std::chrono::milliseconds(row.column_int(16))) >= cutoff) return std::nullopt;
  return row.column_text(1);
}

// A problem and where it sorts: its proxy's chain order (rows in no chain last).
struct Problem {
  std::string proxy;
  std::int64_t seq;
  std::string text;
};

// A row as a link covers it: a version-8 link's, or one member of a batch.
struct Cover {
  const Link* link;
  const detail::ChainedTable* encoding;  // the columns and row tag its digest was made with
  std::string table;
  std::int64_t row_id;
  const std::string* ts;
  detail::Sha256 digest;
};

std::string where(const std::string& table, std::int64_t row_id, const Link& l) {
  return table + " row " + std::to_string(row_id) + " (proxy '" + l.proxy_id + "', " +
         (l.table == "batch" ? "batch link " : "link ") + std::to_string(l.seq) + ")";
}
std::string where(const Cover& c) { return where(c.table, c.row_id, *c.link); }
std::string where(const Link& l) {
  if (l.table == "batch") return "batch link " + std::to_string(l.seq) + " of proxy '" + l.proxy_id + "'";
  return where(l.table, l.row_id, l);
}

// A version-8 digest; all zeros (matching no row) for text that is not one.
detail::Sha256 sha_from_hex(std::string_view hex) {
  detail::Sha256 out{};
  if (hex.size() != 64) return out;
  for (std::size_t i = 0; i < 32; ++i) {
    unsigned v = 0;
    if (std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, v, 16).ptr != hex.data() + 2 * i + 2) return {};
    out[i] = static_cast<unsigned char>(v);
  }
  return out;
}

std::string hex(const std::string& bytes) {
  return detail::to_hex(std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
}

class Verifier {
 public:
  Verifier(const std::filesystem::path& db, const VerifyKeys& keys) : reader_(db) {
    if (!keys.every.empty()) check_.emplace(keys.every, "--audit-verify-key");
    for (const auto& [proxy, file] : keys.per_proxy)
      per_proxy_.try_emplace(proxy, file, "--audit-verify-key " + proxy + "=");
    // Heads, links and rows from one moment: a proxy committing meanwhile must not look
    // like a row in no chain or a head past its links.
    reader_.snapshot();
  }

  ChainReport run() {
    read_chain();
    for (const auto& [proxy, head] : heads_) walk(proxy, head);
    for (const auto& [proxy, key] : per_proxy_)
      if (!heads_.contains(proxy))
        add(proxy, 0, "a key is named for proxy '" + proxy + "' but the store holds no chain of it: its links "
                      "and head were deleted, or the name is wrong");
    for (const auto& [proxy, links] : links_)
      if (!heads_.contains(proxy))
        add(proxy, links.front().seq, "proxy '" + proxy + "' has links but no chain head: the head was deleted");
    read_records();
    if (const PruneRecord* newest = check_cutoffs()) check_start(*newest);
    else unrecorded_start();
    for (const auto* table : detail::chained_tables()) check_rows(*table);
    for (const auto& [key, c] : latest_)
      if (!seen_.contains(key)) missing(c);
    std::stable_sort(problems_.begin(), problems_.end(),
                     [](const Problem& a, const Problem& b) { return std::tie(a.proxy, a.seq) < std::tie(b.proxy, b.seq); });
    for (auto& p : problems_) report_.problems.push_back(std::move(p.text));
    return std::move(report_);
  }

 private:
  void each(const std::string& sql, const std::function<void(const Row&)>& row) {
    reader_.each(sql, detail::Where{}, "", 0, row);
  }

  void read_chain() {
    try {
      each("SELECT proxy_id, seq, hash, anchor_seq, anchor_hash, pruned_before FROM audit_chain_heads", [&](const Row& r) {
        heads_[r.column_text(0)] = {r.column_int(1), r.column_text(2), r.column_int(3), r.column_text(4), r.column_text(5)};
      });
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(e.what()) +
                               " (a store older than schema version 8 has no audit chain: a netbox proxy or launch "
                               "migrates it when it opens it, and chains the rows it writes from then on)");
    }
    each("SELECT tbl, last_id FROM audit_chain_start", [&](const Row& r) { start_[r.column_text(0)] = r.column_int(1); });
    each("SELECT proxy_id, seq, tbl, row_id, ts, digest, hash, signature FROM audit_chain ORDER BY proxy_id, seq",
         [&](const Row& r) {
           links_[r.column_text(0)].push_back(Link{r.column_text(0), r.column_int(1), r.column_text(2), r.column_int(3),
                                                   r.column_text(4), r.column_text(5), r.column_text(6), r.column_text(7),
                                                   {}, {}});
         });
    if (!reader_.has_table("audit_chain_batches")) return;  // a store still at version 8
    // Hashes and signatures as hex, as version 8 stores them; members as their bytes.
    each("SELECT proxy_id, seq, ts, members, hash, signature FROM audit_chain_batches ORDER BY proxy_id, seq",
         [&](const Row& r) {
           links_[r.column_text(0)].push_back(Link{r.column_text(0), r.column_int(1), "batch", 0, r.column_text(2), {},
                                                   hex(r.column_text(4)), hex(r.column_text(5)), {}, r.column_text(3)});
         });
    for (auto& [proxy, links] : links_)
      std::stable_sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.seq < b.seq; });
  }

  void add(const std::string& proxy, std::int64_t seq, std::string text) {
    problems_.push_back({proxy, seq, std::move(text)});
  }

  // The links of one proxy, from its anchor to its head.
  void walk(const std::string& proxy, const Head& head) {
    const detail::SignatureCheck* key = key_for(proxy);
    std::int64_t seq = head.anchor_seq;
    std::string hash = head.anchor_hash;
    std::int64_t signed_upto = head.anchor_seq;
    std::uint64_t signatures = 0;
    const auto it = links_.find(proxy);
    const std::vector<Link> none;
    const auto& links = it == links_.end() ? none : it->second;
    for (const auto& l : links) {
      if (l.seq <= head.anchor_seq) {
        add(proxy, l.seq, "link " + std::to_string(l.seq) + " of proxy '" + proxy + "' lies before the chain's anchor (" +
                              std::to_string(head.anchor_seq) + "): the anchor was moved");
        continue;
      }
      const bool batch = l.table == "batch";
      if (l.seq != seq + 1)
        add(proxy, seq + 1, "links " + std::to_string(seq + 1) + ".." + std::to_string(l.seq - 1) + " of proxy '" + proxy +
                                "' are missing, before " + where(l) + ": rows and their links were deleted");
      else if ((batch ? detail::batch_hash(hash, l) : detail::link_hash(hash, l)) != l.hash)
        add(proxy, l.seq, where(l) + ": the link does not follow from the one before it: a link was inserted, "
                                     "removed or edited");
      if (!l.signature.empty() && key) {
        if (!key->valid(detail::batch_message(l), l.signature))
          add(proxy, l.seq, where(l) + ": the batch signature does not verify with --audit-verify-key: the batch "
                                       "ending here, or a link before it, was altered (or signed by another key)");
        else ++signatures;
        signed_upto = l.seq;
      }
      seq = l.seq;
      hash = l.hash;
      cover(proxy, l);
    }
    if (seq != head.seq || hash != head.hash)
      add(proxy, seq + 1, "the chain of proxy '" + proxy + "' ends at link " + std::to_string(seq) +
                              " but its head records link " + std::to_string(head.seq) +
                              ": links at the end were removed, or the head was edited");
    if (key && signed_upto != head.seq)
      add(proxy, signed_upto + 1, "links " + std::to_string(signed_upto + 1) + ".." + std::to_string(head.seq) +
                                      " of proxy '" + proxy + "' carry no batch signature (written without "
                                      "--audit-signing-key, or their signatures were removed)");
    report_.proxies.push_back("proxy '" + proxy + "': links " + std::to_string(head.anchor_seq + 1) + ".." +
                              std::to_string(head.seq) + (key ? ", " + std::to_string(signatures) + " signed batches" : "") +
                              (head.pruned_before.empty() ? "" : ", head says pruned before " + head.pruned_before));
  }

  // The audit_prune events whose rows the chain covers as they stand (an edited or forged
  // one is named by check_rows and not believed here).
  void read_records() {
    const auto& table = *detail::chained_table("events");
    each(std::string("SELECT ") + table.columns + " FROM events WHERE kind = 'audit_prune' ORDER BY id",
         [&](const Row& r) {
           const auto it = latest_.find({"events", r.column_int(0)});
           if (it == latest_.end() || detail::row_sha(*it->second.encoding, r) != it->second.digest) return;
           if (auto rec = parse_record(r.column_int(0), r.column_text(1), r.column_text(4)))
             records_.push_back(std::move(*rec));
         });
  }

  // The cutoff is the latest a recorded prune gave, never the heads' unsigned column. Returns
  // the newest prune that recorded the chain's start, if any.
  const PruneRecord* check_cutoffs() {
    const PruneRecord* newest = nullptr;
    for (const auto& r : records_) {
      cutoff_ = std::max(cutoff_, r.before);
      if (r.chained && (!newest || std::tie(r.ts, r.event_id) > std::tie(newest->ts, newest->event_id))) newest = &r;
    }
    if (!newest) return nullptr;
    for (const auto& [proxy, head] : heads_)
      if (head.pruned_before > cutoff_)
        add(proxy, 0, "the head of proxy '" + proxy + "' says rows before " + head.pruned_before +
                          " were pruned, but no prune the chain records cut later than " +
                          (cutoff_.empty() ? std::string("nothing") : cutoff_) + ": pruned_before was edited");
    return newest;
  }

  // The chain's start as the newest prune recorded it: audit_chain_start and the heads'
  // anchors must agree with it, and rows are judged by the recorded values.
  void check_start(const PruneRecord& newest) {
    const std::string by = " (as the audit_prune event, events row " + std::to_string(newest.event_id) + ", records it)";
    std::set<std::string> tables;
    for (const auto& [t, id] : start_) tables.insert(t);
    for (const auto& [t, id] : newest.start) tables.insert(t);
    for (const auto& t : tables) {
      const std::int64_t stored = start_.contains(t) ? start_.at(t) : 0;
      const std::int64_t recorded = newest.start.contains(t) ? newest.start.at(t) : 0;
      if (stored != recorded)
        add("", 0, "audit_chain_start says " + t + " rows up to id " + std::to_string(stored) +
                       " are older than the chain, but the chain starts after id " + std::to_string(recorded) + by +
                       ": audit_chain_start was edited");
    }
    start_ = newest.start;
    std::map<std::string, std::pair<std::int64_t, std::string>> anchors;  // per proxy, the furthest recorded
    for (const auto& r : records_)
      for (const auto& [proxy, a] : r.anchors)
        if (a.first > anchors[proxy].first) anchors[proxy] = a;
    for (const auto& [proxy, head] : heads_) {
      const auto it = anchors.find(proxy);
      const std::int64_t seq = it == anchors.end() ? 0 : it->second.first;
      const std::string hash = it == anchors.end() ? std::string(detail::kZeroHash) : it->second.second;
      if (head.anchor_seq != seq || head.anchor_hash != hash)
        add(proxy, 0, "the chain of proxy '" + proxy + "' starts after link " + std::to_string(head.anchor_seq) +
                          " (its head's anchor), but the prunes the chain records moved its start to link " +
                          std::to_string(seq) + ": links were deleted and the anchor moved by hand");
    }
  }

  // No prune records the chain's start: a store never pruned (no anchor, no cutoff), or one
  // pruned only by a netbox from before such records, whose start is the tables' word alone.
  void unrecorded_start() {
    const bool pruned_unrecorded = !records_.empty();
    bool unsigned_start = false;
    for (const auto& [t, id] : start_) unsigned_start |= id > 0;
    for (const auto& [proxy, head] : heads_) {
      if (pruned_unrecorded) {
        cutoff_ = std::max(cutoff_, head.pruned_before);
        unsigned_start |= head.anchor_seq > 0;
        continue;
      }
      if (head.anchor_seq != 0)
        add(proxy, 0, "the chain of proxy '" + proxy + "' starts after link " + std::to_string(head.anchor_seq) +
                          " (its head's anchor), but no prune is recorded in the chain: links were deleted and "
                          "the anchor moved by hand");
      if (!head.pruned_before.empty())
        add(proxy, 0, "the head of proxy '" + proxy + "' says rows before " + head.pruned_before +
                          " were pruned, but no prune is recorded in the chain: pruned_before was edited");
    }
    head_cutoffs_ = pruned_unrecorded;
    if (!unsigned_start) return;
    std::string start;
    for (const auto& [t, id] : start_) start += (start.empty() ? "" : ", ") + t + " up to id " + std::to_string(id);
    report_.notes.push_back(
        "the chain's starting point is unsigned: no audit_prune event in the chain records it (the store was "
        "upgraded to the chain, or pruned, by a netbox from before such records), so audit_chain_start (" + start +
        ") and the heads' anchors and pruned_before are taken as the tables hold them; the next `netbox audit "
        "prune` records them");
  }

  // The rows `l` covers, each now latest.
  void cover(const std::string& proxy, const Link& l) {
    if (l.table != "batch") {
      const auto* v1 = detail::v1_table(l.table);
      if (!v1) return add(proxy, l.seq, where(l) + ": it names no table netbox chains: it was edited");
      latest_[{l.table, l.row_id}] = Cover{&l, v1, l.table, l.row_id, &l.ts, sha_from_hex(l.digest)};
      return;
    }
    auto members = detail::decode_members(l.member_bytes);
    if (!members) {
      add(proxy, l.seq, where(l) + ": its list of rows is not one netbox writes: it was edited");
      return;
    }
    auto& kept = members_.emplace_back(std::move(*members));
    for (const auto& m : kept) latest_[{m.table->name, m.id}] = Cover{&l, m.table, m.table->name, m.id, &m.ts, m.digest};
  }

  void check_rows(const detail::ChainedTable& table) {
    const std::int64_t before = start_.contains(table.name) ? start_[table.name] : 0;
    each(std::string("SELECT ") + table.columns + " FROM " + table.name + " ORDER BY id", [&](const Row& r) {
      const std::int64_t id = r.column_int(0);
      note_prunable(table, r);
      if (id <= 0) {  // before every chain's start whatever audit_chain_start says
        ++report_.rows;
        return add("~", std::numeric_limits<std::int64_t>::max(),
                   std::string(table.name) + " row " + std::to_string(id) +
                       " has an id no netbox writer gives (they start at 1): it was inserted into the store");
      }
      const auto it = latest_.find({table.name, id});
      // A row from before the chain is covered once the writer completes it (a request open
      // at the upgrade): from then on its latest link must match.
      if (id <= before && it == latest_.end()) {
        ++report_.rows_before_chain;
        return;
      }
      ++report_.rows;
      if (it == latest_.end()) {
        add("~", std::numeric_limits<std::int64_t>::max(),  // after every proxy's own problems
            std::string(table.name) + " row " + std::to_string(id) +
                " is in no chain: it was not written by a netbox writer (inserted into the store)");
        return;
      }
      seen_.insert(it->first);
      // Each row's own digest, a batch's member included: the mismatch names its row.
      if (detail::row_sha(*it->second.encoding, r) != it->second.digest)
        add(it->second.link->proxy_id, it->second.link->seq,
            where(it->second) + ": the row does not match the hash recorded when it was written: it was edited");
    });
  }

  // The oldest row of `table` a prune at the cutoff would have deleted, if any is left.
  void note_prunable(const detail::ChainedTable& table, const Row& r) {
    if (cutoff_.empty()) return;
    const auto at = prunable_at(table, r, cutoff_);
    if (!at || *at >= cutoff_) return;
    const auto it = oldest_.find(table.name);
    if (it == oldest_.end() || *at < it->second.first) oldest_[table.name] = {*at, r.column_int(0)};
  }

  void missing(const Cover& c) {
    const auto head = heads_.find(c.link->proxy_id);
    const std::string& cutoff = !head_cutoffs_ ? cutoff_ : head != heads_.end() ? head->second.pruned_before : cutoff_;
    if (cutoff.empty() || *c.ts >= cutoff)
      return add(c.link->proxy_id, c.link->seq, where(c) + ": the row is missing: it was deleted (and no prune covers it)");
    // A prune deletes every such row before its cutoff, oldest first: one that leaves an
    // older row behind was not a prune.
    const auto old = oldest_.find(c.table);
    if (old == oldest_.end() || old->second.first > *c.ts) return;
    add(c.link->proxy_id, c.link->seq,
        where(c) + ": the row is missing, but " + c.table + " row " + std::to_string(old->second.second) + " (" +
            old->second.first + "), as old or older, is still there: a prune before " + cutoff +
            " deletes both, so this one was deleted by hand");
  }

  detail::Reader reader_;
  std::optional<detail::SignatureCheck> check_;  // every proxy's
  std::map<std::string, detail::SignatureCheck> per_proxy_;
  // The key a proxy's batches are checked with; null: none (with keys per proxy, a problem).
  const detail::SignatureCheck* key_for(const std::string& proxy) {
    if (const auto it = per_proxy_.find(proxy); it != per_proxy_.end()) return &it->second;
    if (check_) return &*check_;
    if (!per_proxy_.empty())
      add(proxy, 0, "no --audit-verify-key names proxy '" + proxy + "', and no key is given for every proxy: its "
                    "chain is not checked against a key of its own");
    return nullptr;
  }
  std::map<std::string, Head> heads_;
  std::map<std::string, std::int64_t> start_;
  std::map<std::string, std::vector<Link>> links_;
  std::list<std::vector<detail::Member>> members_;  // the batches' members, decoded (stable addresses)
  std::map<std::pair<std::string, std::int64_t>, Cover> latest_;  // (table, id) -> its latest cover
  std::set<std::pair<std::string, std::int64_t>> seen_;
  std::vector<PruneRecord> records_;  // the audit_prune events the chain covers as they stand
  std::string cutoff_;  // the newest recorded prune's: rows older may be missing
  bool head_cutoffs_ = false;  // a store pruned before netbox recorded its cutoffs: the heads' (unsigned)
  std::map<std::string, std::pair<std::string, std::int64_t>> oldest_;  // table -> (time, id), see note_prunable
  std::vector<Problem> problems_;
  ChainReport report_;
};

}  // namespace

void check_signing_key(const std::filesystem::path& key_file, std::string_view flag) {
  detail::Signer probe(key_file, flag);
}

ChainReport verify_chain(const std::filesystem::path& db, const std::filesystem::path& verify_key) {
  return Verifier(db, VerifyKeys{verify_key, {}}).run();
}

ChainReport verify_chain(const std::filesystem::path& db, const VerifyKeys& keys) {
  return Verifier(db, keys).run();
}

}  // namespace netbox::audit
