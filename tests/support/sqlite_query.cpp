#include "support/sqlite_query.hpp"

#include <sqlite3.h>

#include <stdexcept>

namespace netbox::test {

std::vector<std::vector<std::string>> query(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::vector<std::vector<std::string>> rows;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    throw std::runtime_error("cannot open " + db.string());
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error("query on " + db.string() + " failed: " + msg);
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      auto* t = sqlite3_column_text(st, i);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

std::vector<std::string> query_column(const std::filesystem::path& db, const std::string& sql) {
  std::vector<std::string> out;
  for (auto& row : query(db, sql)) out.push_back(row.empty() ? std::string() : std::move(row.front()));
  return out;
}

}  // namespace netbox::test
