#include "netbox/audit/schema.hpp"

#include "migrations.hpp"
#include "sqlite.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <system_error>

namespace netbox::audit {
namespace {

using detail::Db;
using detail::SqliteError;

constexpr std::chrono::milliseconds kDefaultBusyTimeout{5000};

std::string shown(const std::filesystem::path& path) { return path.string(); }

Db open_raw(const std::filesystem::path& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK)
    throw std::runtime_error("cannot open audit database " + shown(path) + ": " +
                             (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

// The first read of the header is where SQLite notices a file that is not a database.
int checked_version(sqlite3* db, const std::filesystem::path& path) {
  try {
    return schema_version(db);
  } catch (const SqliteError& e) {
    if (e.code() == SQLITE_NOTADB)
      throw DatabaseRejected(shown(path) + " is not an SQLite database");
    throw std::runtime_error("cannot read audit database " + shown(path) + ": " + e.what());
  }
}

void refuse_newer(int version, const std::filesystem::path& path) {
  if (version > kSchemaVersion)
    throw DatabaseRejected(shown(path) + " has audit schema version " + std::to_string(version) +
                           ", newer than the version " + std::to_string(kSchemaVersion) +
                           " this netbox understands; use a newer netbox to read or write it");
}

// A new database file is created here, whatever the umask: SQLite would create it 0644
// (and gives its -wal and -shm the database file's permissions), which lets any local
// user, an agent too, read the rows and lock the -shm. It is 0600, or 0640 in the group of
// a folder that lets its group in (the package's /var/lib/netbox is root:netbox 0750, so
// that the netbox group, the security team, reads the audit with `netbox audit`).
void create_private(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // EEXIST: an existing database keeps its mode (check_db_location refuses
                       // writable ones); other errors are reported by sqlite3_open_v2 in its words
  mode_t mode = 0600;
  struct stat dir {};
  const auto parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (::stat(parent.c_str(), &dir) == 0 && (dir.st_mode & S_IXGRP) && !(dir.st_mode & (S_IWGRP | S_IWOTH)) &&
      ::fchown(fd, static_cast<uid_t>(-1), dir.st_gid) == 0)
    mode = 0640;
  ::fchmod(fd, mode);
  ::close(fd);
}

// A -wal or -shm left by an older netbox (0644) gets no more permissions than the
// database file itself, and never any for others.
void tighten_companions(const std::filesystem::path& path) {
  struct stat db_st {};
  if (::stat(path.c_str(), &db_st) != 0) return;
  const mode_t wanted = db_st.st_mode & 0660;
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string file = path.string() + suffix;
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777 & ~wanted) != 0)
      ::chmod(file.c_str(), wanted);
  }
}

bool has_tables(sqlite3* db) {
  detail::Statement count(db, "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table'");
  count.step();
  return count.column_int(0) > 0;
}

void migrate(sqlite3* db, const std::filesystem::path& path) {
  for (const auto& step : detail::migrations()) {
    // IMMEDIATE takes the write lock first, so two processes opening a fresh file at once
    // apply each step exactly once: the second one sees the new version and skips.
    detail::exec(db, "BEGIN IMMEDIATE");
    try {
      const int current = schema_version(db);
      if (current < step.version) {
        if (current == 0 && has_tables(db))
          throw DatabaseRejected(shown(path) +
                                 " is an SQLite database but not a netbox audit database "
                                 "(it has tables and no netbox schema version)");
        detail::exec(db, step.sql);
        if (step.views) detail::exec(db, detail::views_sql());
        detail::exec(db, ("PRAGMA user_version = " + std::to_string(step.version)).c_str());
      }
      detail::exec(db, "COMMIT");
    } catch (const DatabaseRejected&) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    } catch (const std::exception& e) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw std::runtime_error("cannot migrate audit database " + shown(path) + " to schema version " +
                               std::to_string(step.version) + ": " + e.what());
    }
  }
}

}  // namespace

int schema_version(sqlite3* db) {
  detail::Statement version(db, "PRAGMA user_version");
  version.step();
  return static_cast<int>(version.column_int(0));
}

sqlite3* open_for_writing(const std::filesystem::path& path, bool synchronous_full) {
  return open_for_writing(path, synchronous_full, kDefaultBusyTimeout);
}

sqlite3* open_for_writing(const std::filesystem::path& path, bool synchronous_full,
                          std::chrono::milliseconds busy_timeout) {
  create_private(path);
  Db db = open_raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  sqlite3_busy_timeout(db.get(), static_cast<int>(busy_timeout.count()));
  const int version = checked_version(db.get(), path);
  refuse_newer(version, path);
  try {
    detail::Statement wal(db.get(), "PRAGMA journal_mode = WAL");
    wal.step();
    if (wal.column_text(0) != "wal")
      throw std::runtime_error("the file system does not support WAL mode (journal_mode is " +
                               wal.column_text(0) + ")");
    // NORMAL in WAL mode survives a process crash; only a power loss can take the last commits.
    detail::exec(db.get(), synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    // Keep the WAL from staying huge after a burst has been checkpointed.
    detail::exec(db.get(), "PRAGMA journal_size_limit = 67108864");
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot set up audit database " + shown(path) + ": " + e.what());
  }
  // A store already at this version (every open but the first) needs none of the steps,
  // each a write transaction of its own: a launch opens the store every time.
  if (version < kSchemaVersion) migrate(db.get(), path);
  tighten_companions(path);
  return db.release();
}

sqlite3* open_for_reading(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw DatabaseRejected("no audit database at " + shown(path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw DatabaseRejected(shown(path) + " is not a file, so it is not an audit database");
  Db db = open_raw(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
  // A reader in WAL mode only waits while the writer restarts or recovers the log.
  sqlite3_busy_timeout(db.get(), static_cast<int>(kDefaultBusyTimeout.count()));
  const int version = checked_version(db.get(), path);
  refuse_newer(version, path);
  if (version == 0)
    throw DatabaseRejected(shown(path) + " is not a netbox audit database (no netbox schema version)");
  return db.release();
}

}  // namespace netbox::audit
