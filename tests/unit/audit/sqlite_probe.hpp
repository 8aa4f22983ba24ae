#pragma once
// Tests look at the store the way a security team would: with plain SQL on the file.
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace netbox::audit::testing {

class SqliteProbe {
 public:
  explicit SqliteProbe(const std::filesystem::path& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string what = sqlite3_errmsg(db_);
      sqlite3_close_v2(db_);
      throw std::runtime_error("probe cannot open " + path.string() + ": " + what);
    }
    sqlite3_busy_timeout(db_, 10000);
  }
  ~SqliteProbe() { sqlite3_close_v2(db_); }
  SqliteProbe(const SqliteProbe&) = delete;
  SqliteProbe& operator=(const SqliteProbe&) = delete;

  // Returns the SQLite result code; the message is kept in last_error().
  int exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    last_error_ = err ? err : "";
    sqlite3_free(err);
    return rc;
  }

  // The first column of the first row, as text ("" for NULL or no row).
  std::string text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw std::runtime_error("probe: " + sql + ": " + sqlite3_errmsg(db_));
    std::string out;
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      std::string what = sqlite3_errmsg(db_);
      sqlite3_finalize(stmt);
      throw std::runtime_error("probe: " + sql + ": " + what);
    }
    sqlite3_finalize(stmt);
    return out;
  }

  std::int64_t number(const std::string& sql) {
    const std::string t = text(sql);
    return t.empty() ? 0 : std::stoll(t);
  }

  const std::string& last_error() const { return last_error_; }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string last_error_;
};

}  // namespace netbox::audit::testing
