#include "netbox/audit/verify.hpp"

#include "chain.hpp"
#include "reader.hpp"

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
  Verifier(const std::filesystem::path& db, const std::filesystem::path& key) : reader_(db) {
    if (!key.empty()) check_.emplace(key, "--audit-verify-key");
    // Heads, links and rows from one moment: a proxy committing meanwhile must not look
    // like a row in no chain or a head past its links.
    reader_.snapshot();
  }

  ChainReport run() {
    read_chain();
    for (const auto& [proxy, head] : heads_) walk(proxy, head);
    for (const auto& [proxy, links] : links_)
      if (!heads_.contains(proxy))
        add(proxy, links.front().seq, "proxy '" + proxy + "' has links but no chain head: the head was deleted");
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
      if (!l.signature.empty() && check_) {
        if (!check_->valid(detail::batch_message(l), l.signature))
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
    if (check_ && signed_upto != head.seq)
      add(proxy, signed_upto + 1, "links " + std::to_string(signed_upto + 1) + ".." + std::to_string(head.seq) +
                                      " of proxy '" + proxy + "' carry no batch signature (written without "
                                      "--audit-signing-key, or their signatures were removed)");
    report_.proxies.push_back("proxy '" + proxy + "': links " + std::to_string(head.anchor_seq + 1) + ".." +
                              std::to_string(head.seq) + (check_ ? ", " + std::to_string(signatures) + " signed batches" : "") +
                              (head.pruned_before.empty() ? "" : ", pruned before " + head.pruned_before));
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

  void missing(const Cover& c) {
    const auto head = heads_.find(c.link->proxy_id);
    if (head != heads_.end() && !head->second.pruned_before.empty() && *c.ts < head->second.pruned_before) return;
    add(c.link->proxy_id, c.link->seq, where(c) + ": the row is missing: it was deleted (and no prune covers it)");
  }

  detail::Reader reader_;
  std::optional<detail::SignatureCheck> check_;
  std::map<std::string, Head> heads_;
  std::map<std::string, std::int64_t> start_;
  std::map<std::string, std::vector<Link>> links_;
  std::list<std::vector<detail::Member>> members_;  // the batches' members, decoded (stable addresses)
  std::map<std::pair<std::string, std::int64_t>, Cover> latest_;  // (table, id) -> its latest cover
  std::set<std::pair<std::string, std::int64_t>> seen_;
  std::vector<Problem> problems_;
  ChainReport report_;
};

}  // namespace

void check_signing_key(const std::filesystem::path& key_file, std::string_view flag) {
  detail::Signer probe(key_file, flag);
}

ChainReport verify_chain(const std::filesystem::path& db, const std::filesystem::path& verify_key) {
  return Verifier(db, verify_key).run();
}

}  // namespace netbox::audit
