// The SQLite store: one connection in WAL mode, the prepared statements of WriterStatements.
#include "chain_stores.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "sqlite.hpp"
#include "write_store.hpp"
#include "writer_statements.hpp"

#include <sys/stat.h>

namespace netbox::audit::detail {
namespace {

// `netbox launch` opens and closes the store once per agent, and by default the last
// connection to close checkpoints the WAL into the database (two fdatasyncs) and deletes
// it, so the next open recreates it (one more fdatasync, of the directory): ~25 ms of a
// launch. Closing without that checkpoint keeps exactly the documented bound (commits
// under synchronous=NORMAL are safe from a process crash; only a power loss may take the
// last ones; synchronous=FULL syncs each commit anyway); a later writer checkpoints the
// log as it grows (wal_autocheckpoint), and readers read through the log meanwhile.
void keep_wal_on_close(sqlite3* db) {
  int on = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

// The WAL file only shrinks when it is truncated, so its size bounds what the next first
// open re-reads. TRUNCATE writes every frame into the database, syncs it and empties the
// log; with no busy wait, a reader in another process makes it give up, and a later close
// tries again.
void truncate_long_wal(sqlite3* db, const std::string& wal_path, int limit_pages) {
  struct stat st {};
  if (::stat(wal_path.c_str(), &st) != 0) return;
  constexpr long long kFrame = 4096 + 24;  // SQLite's default page (netbox keeps it) and a frame header
  if (st.st_size <= limit_pages * kFrame) return;
  sqlite3_busy_timeout(db, 0);
  sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
}

class SqliteWriteStore final : public WriteStore {
 public:
  explicit SqliteWriteStore(const WriterOptions& o)
      : db_(open_for_writing(o.db_path, o.synchronous_full, o.busy_timeout)),
        statements_(db_.get(), o.proxy_id),
        chain_(db_.get()),
        proxy_id_(o.proxy_id),
        wal_path_(o.db_path.string() + "-wal"),
        wal_close_limit_pages_(o.wal_close_limit_pages),
        signer_(o.signing_key.empty() ? nullptr : std::make_unique<Signer>(o.signing_key, "--audit-signing-key")) {
    keep_wal_on_close(db_.get());
  }
  ~SqliteWriteStore() override {
    if (wal_close_limit_pages_ > 0) truncate_long_wal(db_.get(), wal_path_, wal_close_limit_pages_);
  }

  void begin() override {
    touched_.clear();
    statements_.begin();
  }
  void commit() override {
    seal(chain_, proxy_id_, touched_, signer_.get());
    statements_.commit();
  }
  void abandon() override {
    chain_.reset();
    statements_.abandon();
  }
  std::int64_t insert_request(const AuditRecord& r, const Completion* c, std::int64_t parent_id) override {
    return touch(statements_.insert_request(r, c, parent_id));
  }
  bool complete_request(std::int64_t id, const Completion& c) override {
    auto row = statements_.complete_request(id, c);
    if (!row) return false;
    touch(std::move(*row));
    return true;
  }
  void insert_event(const Event& e) override { touch(statements_.insert_event(e)); }
  void insert_agent(const AgentRecord& a) override { touch(statements_.insert_agent(a)); }
  void agent_exited(const AgentExit& x) override { touch(statements_.agent_exited(x)); }
  PruneCounts prune_batch(Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit) override {
    return audit::prune_batch(db_.get(), cutoff, now, limit);
  }

 private:
  std::int64_t touch(Touched row) {
    touched_.push_back(std::move(row));
    return touched_.back().id;
  }

  Db db_;
  WriterStatements statements_;
  SqliteChainStore chain_;
  std::string proxy_id_;
  std::string wal_path_;
  int wal_close_limit_pages_;
  std::unique_ptr<Signer> signer_;
  std::vector<Touched> touched_;  // rows the open batch wrote, for its chain links
};

}  // namespace

std::unique_ptr<WriteStore> open_sqlite_write_store(const WriterOptions& options) {
  return std::make_unique<SqliteWriteStore>(options);
}

std::unique_ptr<WriteStore> open_write_store(const WriterOptions& options) {
  if (is_postgresql(options.db_path.native())) return open_postgresql_write_store(options);
  return open_sqlite_write_store(options);
}

}  // namespace netbox::audit::detail
