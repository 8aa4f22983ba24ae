#pragma once
// The two backends' side of sealing a batch (chain.hpp), on the writer's own connection,
// inside the batch's open transaction.
#include "chain.hpp"
#include "pg.hpp"
#include "sqlite.hpp"

namespace netbox::audit::detail {

class SqliteChainStore final : public ChainStore {
 public:
  explicit SqliteChainStore(sqlite3* db);
  // BEGIN IMMEDIATE holds the database's write lock: the head read here stays ours.
  Head lock_head(const std::string& proxy_id) override;
  void append(const Batch& batch) override;
  // Ends a failed transaction's use of the statements.
  void reset();

 private:
  sqlite3* db_;
  Statement create_head_, read_head_, insert_batch_, move_head_;
};

// PostgreSQL's side rides on the batch's own message (pg_write_store.cpp): the head is read
// by lock_sql() among the batch's first statements, and the link is a binary COPY (no hex to
// write or parse) followed by the statement that moves the head to it, before the COMMIT.
class PgChainStore final : public ChainStore {
 public:
  // Statements that create the proxy's head if absent and read it, locked (SELECT ... FOR
  // UPDATE: another writer with the same proxy_id waits for our commit); one row, for head().
  static std::string lock_sql(const std::string& proxy_id);
  static Head head(const PGresult* locked);
  // The COPY that takes copy_data(), then the head moved to the link it stored (if any).
  static std::string append_sql(const std::string& proxy_id);

  // `head`: what lock_sql() read.
  explicit PgChainStore(Head head) : head_(std::move(head)) {}
  Head lock_head(const std::string&) override { return head_; }
  void append(const Batch& batch) override;  // the link's row, into copy_data()
  // COPY's binary format: its header, the row append() made (or none), its trailer.
  std::string copy_data() const;

 private:
  Head head_;
  std::string row_;
};

// trim_chain's statements on either backend's connection.
RunSql sqlite_runner(sqlite3* db);
RunSql pg_runner(PgConn& conn);

}  // namespace netbox::audit::detail
