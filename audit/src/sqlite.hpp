#pragma once
// Thin RAII over the SQLite C API, private to the audit module: errors become
// exceptions that carry the SQLite result code, statements are prepared once.
#include "row.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace netbox::audit::detail {

class SqliteError : public std::runtime_error {
 public:
  SqliteError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }  // primary result code (SQLITE_FULL, SQLITE_BUSY, ...)
 private:
  int code_;
};

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

// Throws SqliteError with `context` and SQLite's own message.
[[noreturn]] void throw_error(sqlite3* db, int rc, std::string_view context);

// Runs one or more statements that return no rows we need.
void exec(sqlite3* db, const char* sql);

class Statement final : public Row {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  void bind(int index, std::int64_t value);
  void bind(int index, std::string_view text);
  void bind_null(int index);
  // Empty text is stored as NULL so SQL users can write `error IS NOT NULL`.
  void bind_text_or_null(int index, std::string_view text);
  // As bind / bind_text_or_null without SQLite's copy of the text: for the writer's
  // hot statements, whose text lives in the record until the statement has run.
  void bind_view(int index, std::string_view text);
  void bind_view_or_null(int index, std::string_view text);
  // Bytes as a BLOB, not copied either (empty: NULL).
  void bind_blob_view_or_null(int index, std::string_view bytes);

  // true while a row is available; throws on error.
  bool step();
  // Ready for the next use: resets and clears the bindings.
  void reset();

  int column_count() const { return sqlite3_column_count(stmt_); }
  bool is_null(int column) const override;
  std::int64_t column_int(int column) const override;
  std::string column_text(int column) const override;  // "" for NULL

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace netbox::audit::detail
