#pragma once
// What every reader of the store shares: the WHERE clause of a Filter, and running a
// query on the file opened read-only with errors that name the file.
#include "netbox/audit/query.hpp"
#include "sqlite.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

// A WHERE clause and its parameters in order. Every value is bound, never spliced into
// the SQL, so a filter like "x' OR 1" only ever matches that text.
struct Where {
  std::string sql;
  std::vector<std::string> params;
  void add(std::string_view condition, std::string value);
};

Where where_clause(const Filter& filter);

class Reader {
 public:
  explicit Reader(const std::filesystem::path& db);

  // Runs `select` + the WHERE clause + `rest` + " LIMIT ?" (`limit` 0: none) with the
  // WHERE parameters bound, and calls `row` with the statement on each result row.
  template <class Row>
  void each(std::string_view select, const Where& where, std::string_view rest, std::size_t limit, Row&& row) {
    try {
      Statement s(db_.get(), std::string(select) + where.sql + std::string(rest) + " LIMIT ?");
      int i = 1;
      for (const auto& p : where.params) s.bind(i++, p);
      // SQLite reads a negative LIMIT as "no limit".
      s.bind(i, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
      while (s.step()) row(static_cast<const Statement&>(s));
    } catch (const SqliteError& e) {
      throw read_error(e);
    }
  }

 private:
  std::runtime_error read_error(const std::exception& e) const;

  std::filesystem::path path_;
  Db db_;
};

// A stored timestamp back as a time point; the epoch for text that is not one.
Clock::time_point stored_time(const std::string& text);

}  // namespace netbox::audit::detail
