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

// PostgreSQL's side rides on the batch's own round trips (pg_write_store.cpp): the head is
// read by lock_sql() among the batch's first statements, and the link's statements are added
// to the script that ends with its COMMIT.
class PgChainStore final : public ChainStore {
 public:
  // Statements that create the proxy's head if absent and read it, locked (SELECT ... FOR
  // UPDATE: another writer with the same proxy_id waits for our commit); one row, for head().
  static std::string lock_sql(const std::string& proxy_id);
  static Head head(const PGresult* locked);

  // `head`: what lock_sql() read; append() adds its statements to `script`.
  PgChainStore(Head head, std::string& script) : head_(std::move(head)), script_(script) {}
  Head lock_head(const std::string&) override { return head_; }
  void append(const Batch& batch) override;

 private:
  Head head_;
  std::string& script_;
};

// trim_chain's statements on either backend's connection.
RunSql sqlite_runner(sqlite3* db);
RunSql pg_runner(PgConn& conn);

}  // namespace netbox::audit::detail
