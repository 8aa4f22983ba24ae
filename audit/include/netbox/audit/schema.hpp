#pragma once
// Opening a database and bringing its schema to the current version (PRAGMA user_version).
#include <filesystem>

struct sqlite3;

namespace netbox::audit {

inline constexpr int kSchemaVersion = 1;

// Opens read-write, sets WAL, busy timeout, and migrates. Throws std::runtime_error naming the path.
sqlite3* open_for_writing(const std::filesystem::path& path, bool synchronous_full);
// Opens read-only (works while a writer runs). Throws if the file does not exist or is not a netbox db.
sqlite3* open_for_reading(const std::filesystem::path& path);

}  // namespace netbox::audit
