#include "chain_stores.hpp"

#include <string>

namespace netbox::audit::detail {
namespace {

constexpr const char* kCreateHead =
    "INSERT INTO audit_chain_heads (proxy_id, seq, hash) VALUES (?1, 0, "
    "'0000000000000000000000000000000000000000000000000000000000000000') ON CONFLICT DO NOTHING";

std::string link_values(const Link& l) {
  // COPY text: hex, digits and the proxy id (escaped) only.
  std::string out;
  append_copy_text(out, l.proxy_id);
  out += '\t' + std::to_string(l.seq) + '\t' + l.table + '\t' + std::to_string(l.row_id) + '\t';
  append_copy_text(out, l.ts);
  out += '\t' + l.digest + '\t' + l.hash + '\t' + (l.signature.empty() ? std::string("\\N") : l.signature) + '\n';
  return out;
}

}  // namespace

SqliteChainStore::SqliteChainStore(sqlite3* db)
    : db_(db),
      create_head_(db, kCreateHead),
      read_head_(db, "SELECT seq, hash FROM audit_chain_heads WHERE proxy_id = ?1"),
      insert_link_(db,
                   "INSERT INTO audit_chain (proxy_id, seq, tbl, row_id, ts, digest, hash, signature) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
      move_head_(db, "UPDATE audit_chain_heads SET seq = ?2, hash = ?3 WHERE proxy_id = ?1") {}

ChainStore::Head SqliteChainStore::lock_head(const std::string& proxy_id) {
  create_head_.bind(1, proxy_id);
  create_head_.step();
  create_head_.reset();
  read_head_.bind(1, proxy_id);
  Head head;
  if (read_head_.step()) head = {read_head_.column_int(0), read_head_.column_text(1)};
  read_head_.reset();
  return head;
}

void SqliteChainStore::append(const std::vector<Link>& links) {
  for (const auto& l : links) {
    // Bound without copies: `links` outlives each step.
    auto& s = insert_link_;
    s.bind_view(1, l.proxy_id);
    s.bind(2, l.seq);
    s.bind_view(3, l.table);
    s.bind(4, l.row_id);
    s.bind_view(5, l.ts);
    s.bind_view(6, l.digest);
    s.bind_view(7, l.hash);
    s.bind_view_or_null(8, l.signature);
    s.step();
    s.reset();
  }
  move_head_.bind(1, links.back().proxy_id);
  move_head_.bind(2, links.back().seq);
  move_head_.bind(3, links.back().hash);
  move_head_.step();
  move_head_.reset();
}

void SqliteChainStore::reset() {
  for (Statement* s : {&create_head_, &read_head_, &insert_link_, &move_head_}) s->reset();
}

ChainStore::Head PgChainStore::lock_head(const std::string& proxy_id) {
  std::string create = kCreateHead;
  create.replace(create.find("?1"), 2, "$1");
  conn_.query(create, {proxy_id});
  auto r = conn_.query("SELECT seq, hash FROM audit_chain_heads WHERE proxy_id = $1 FOR UPDATE", {proxy_id});
  if (PQntuples(r.get()) == 0) return {};
  return {std::stoll(pg_value(r.get(), 0, 0)), pg_value(r.get(), 0, 1)};
}

void PgChainStore::append(const std::vector<Link>& links) {
  std::string data;
  for (const auto& l : links) data += link_values(l);
  conn_.copy_in("COPY audit_chain (proxy_id, seq, tbl, row_id, ts, digest, hash, signature) FROM STDIN", data);
  conn_.query("UPDATE audit_chain_heads SET seq = $2, hash = $3 WHERE proxy_id = $1",
              {links.back().proxy_id, std::to_string(links.back().seq), links.back().hash});
}

RunSql sqlite_runner(sqlite3* db) {
  return [db](const std::string& sql, const std::vector<std::string>& params) {
    Statement s(db, sql);
    for (std::size_t i = 0; i < params.size(); ++i) s.bind(static_cast<int>(i + 1), params[i]);
    std::vector<std::vector<std::string>> rows;
    while (s.step()) {
      auto& row = rows.emplace_back();
      for (int c = 0, n = s.column_count(); c < n; ++c) row.push_back(s.column_text(c));
    }
    return rows;
  };
}

RunSql pg_runner(PgConn& conn) {
  return [&conn](const std::string& sql, const std::vector<std::string>& params) {
    std::string numbered = sql;
    for (auto at = numbered.find('?'); at != std::string::npos; at = numbered.find('?', at)) numbered[at] = '$';
    PgParams values(params.begin(), params.end());
    auto r = conn.query(numbered, values);
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      auto& row = rows.emplace_back();
      for (int c = 0; c < PQnfields(r.get()); ++c) row.push_back(PgRow(r.get(), i).column_text(c));
    }
    return rows;
  };
}

}  // namespace netbox::audit::detail
