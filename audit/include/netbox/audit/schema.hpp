#pragma once
// Opening a database and bringing its schema to the current version (PRAGMA user_version).
#include <chrono>
#include <filesystem>
#include <stdexcept>

struct sqlite3;

namespace netbox::audit {

inline constexpr int kSchemaVersion = 11;

// The file is missing, is not SQLite, is not a netbox audit database, or was written by a
// newer netbox: a configuration error (the CLI exits 2). The message names the path.
class DatabaseRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Opens read-write, sets WAL, busy timeout, and migrates. Throws std::runtime_error naming the path
// (DatabaseRejected for a file that is not ours or too new). The caller owns the handle
// (sqlite3_close_v2).
sqlite3* open_for_writing(const std::filesystem::path& path, bool synchronous_full);
// The same with an explicit busy timeout (how long a write waits for another connection's lock).
sqlite3* open_for_writing(const std::filesystem::path& path, bool synchronous_full,
                          std::chrono::milliseconds busy_timeout);
// Opens read-only (works while a writer runs). Throws if the file does not exist or is not a netbox db.
sqlite3* open_for_reading(const std::filesystem::path& path);

// The schema version stored in the file (PRAGMA user_version).
int schema_version(sqlite3* db);

}  // namespace netbox::audit
