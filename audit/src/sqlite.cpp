#include "sqlite.hpp"

namespace netbox::audit::detail {

void throw_error(sqlite3* db, int rc, std::string_view context) {
  std::string what(context);
  what += ": ";
  what += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw SqliteError(what, rc & 0xff);
}

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string what = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(what, rc & 0xff);
  }
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &stmt_, nullptr);
  if (rc != SQLITE_OK) throw_error(db, rc, "preparing a statement");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

void Statement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) throw_error(db_, rc, "binding a value");
}

namespace {

void bind_text(sqlite3* db, sqlite3_stmt* stmt, int index, std::string_view text, sqlite3_destructor_type lifetime) {
  const int rc = sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), lifetime);
  if (rc != SQLITE_OK) throw_error(db, rc, "binding a value");
}

}  // namespace

void Statement::bind(int index, std::string_view text) {
  // SQLITE_TRANSIENT: SQLite copies, so the caller's buffer may go away before step().
  bind_text(db_, stmt_, index, text, SQLITE_TRANSIENT);
}

void Statement::bind_view(int index, std::string_view text) { bind_text(db_, stmt_, index, text, SQLITE_STATIC); }

void Statement::bind_view_or_null(int index, std::string_view text) {
  if (text.empty()) bind_null(index);
  else bind_view(index, text);
}

void Statement::bind_blob_view_or_null(int index, std::string_view bytes) {
  if (bytes.empty()) return bind_null(index);
  const int rc = sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
  if (rc != SQLITE_OK) throw_error(db_, rc, "binding a value");
}

void Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) throw_error(db_, rc, "binding a value");
}

void Statement::bind_text_or_null(int index, std::string_view text) {
  if (text.empty()) bind_null(index);
  else bind(index, text);
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_error(db_, rc, "writing or reading the audit database");
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Statement::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

}  // namespace netbox::audit::detail
