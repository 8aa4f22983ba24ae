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

class PgChainStore final : public ChainStore {
 public:
  explicit PgChainStore(PgConn& conn) : conn_(conn) {}
  // SELECT ... FOR UPDATE: another writer with the same proxy_id waits for our commit.
  Head lock_head(const std::string& proxy_id) override;
  void append(const Batch& batch) override;

 private:
  PgConn& conn_;
};

// trim_chain's statements on either backend's connection.
RunSql sqlite_runner(sqlite3* db);
RunSql pg_runner(PgConn& conn);

}  // namespace netbox::audit::detail
