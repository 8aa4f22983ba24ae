#include "chain_stores.hpp"

#include <cstdint>
#include <string>

namespace netbox::audit::detail {
namespace {

constexpr const char* kCreateHead =
    "INSERT INTO audit_chain_heads (proxy_id, seq, hash) VALUES (?1, 0, "
    "'0000000000000000000000000000000000000000000000000000000000000000') ON CONFLICT DO NOTHING";

std::string hex(std::string_view bytes) {
  return to_hex(std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
}

}  // namespace

SqliteChainStore::SqliteChainStore(sqlite3* db)
    : db_(db),
      create_head_(db, kCreateHead),
      read_head_(db, "SELECT seq, hash FROM audit_chain_heads WHERE proxy_id = ?1"),
      insert_batch_(db,
                    "INSERT INTO audit_chain_batches (proxy_id, seq, ts, members, hash, signature) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
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

void SqliteChainStore::append(const Batch& b) {
  // Bound without copies: `b` outlives the step.
  auto& s = insert_batch_;
  s.bind_view(1, b.proxy_id);
  s.bind(2, b.seq);
  s.bind_view(3, b.ts);
  s.bind_blob_view_or_null(4, b.members);
  s.bind_blob_view_or_null(5, b.hash);
  s.bind_blob_view_or_null(6, b.signature);
  s.step();
  s.reset();
  move_head_.bind(1, b.proxy_id);
  move_head_.bind(2, b.seq);
  move_head_.bind(3, hex(b.hash));
  move_head_.step();
  move_head_.reset();
}

void SqliteChainStore::reset() {
  for (Statement* s : {&create_head_, &read_head_, &insert_batch_, &move_head_}) s->reset();
}

std::string PgChainStore::lock_sql(const std::string& proxy_id) {
  std::string id;
  append_sql_literal(id, proxy_id);
  std::string sql = kCreateHead;
  sql.replace(sql.find("?1"), 2, id);
  return sql + ";SELECT seq, hash FROM audit_chain_heads WHERE proxy_id = " + id + " FOR UPDATE;";
}

ChainStore::Head PgChainStore::head(const PGresult* locked) {
  if (PQntuples(locked) == 0) return {};
  return {std::stoll(pg_value(locked, 0, 0)), pg_value(locked, 0, 1)};
}

std::string PgChainStore::append_sql(const std::string& proxy_id) {
  std::string id;
  append_sql_literal(id, proxy_id);
  return "COPY audit_chain_batches (proxy_id, seq, ts, members, hash, signature) FROM STDIN (FORMAT binary);"
         "UPDATE audit_chain_heads h SET seq = b.seq, hash = encode(b.hash, 'hex') FROM audit_chain_batches b "
         "WHERE h.proxy_id = " + id + " AND b.proxy_id = h.proxy_id AND b.seq = h.seq + 1;";
}

namespace {

void put_be(std::string& out, std::uint64_t n, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
}

// One field of a binary COPY row: its length (-1: NULL) and its bytes (text as UTF-8, bytea raw).
void put_field(std::string& out, std::string_view bytes, bool null_if_empty = false) {
  if (bytes.empty() && null_if_empty) {
    put_be(out, 0xffffffffu, 4);
    return;
  }
  put_be(out, bytes.size(), 4);
  out += bytes;
}

}  // namespace

void PgChainStore::append(const Batch& b) {
  row_.clear();
  put_be(row_, 6, 2);  // columns
  put_field(row_, b.proxy_id);
  put_be(row_, 8, 4);  // seq: bigint, 8 bytes big-endian
  put_be(row_, static_cast<std::uint64_t>(b.seq), 8);
  put_field(row_, b.ts);
  put_field(row_, b.members);
  put_field(row_, b.hash);
  put_field(row_, b.signature, true);
}

std::string PgChainStore::copy_data() const {
  static constexpr char kSignature[] = "PGCOPY\n\377\r\n";  // and its NUL
  std::string out(kSignature, sizeof kSignature);
  put_be(out, 0, 4);  // flags
  put_be(out, 0, 4);  // header extension length
  out += row_;
  put_be(out, 0xffff, 2);  // trailer
  return out;
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
