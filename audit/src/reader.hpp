#pragma once
// What every reader of the store shares: the WHERE clause of a Filter, and running a
// query on the store opened read-only (an SQLite file or a PostgreSQL server) with errors
// that name it. The readers' SQL is one text for both backends: `?` placeholders (numbered
// $1.. for PostgreSQL here), CASE rather than SQLite's boolean arithmetic; where the two
// differ (a glob, the rule of the latest row in a group) Reader says how.
#include "netbox/audit/query.hpp"
#include "row.hpp"
#include "sqlite.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

class PgConn;

// A WHERE clause and its parameters in order. Every value is bound, never spliced into
// the SQL, so a filter like "x' OR 1" only ever matches that text.
struct Where {
  std::string sql;
  std::vector<std::string> params;
  void add(std::string_view condition, std::string value);
};

// An SQLite GLOB as an anchored POSIX regular expression that matches the same text
// (*, ?, [abc], [^abc], [a-z]; every other character literal).
std::string glob_to_regex(std::string_view glob);

class Reader {
 public:
  explicit Reader(const std::filesystem::path& db);
  ~Reader();

  // Every later read sees one moment of the store, whatever writers commit meanwhile (a read
  // transaction, REPEATABLE READ on PostgreSQL), until the Reader is destroyed.
  void snapshot();

  // Whether the store has table `name` (one added by a later schema version than it has).
  bool has_table(const std::string& name);

  Where where(const Filter& filter) const;
  void add_exe_condition(Where& w, const std::string& exe) const;
  // An aggregate giving `column` of the group's row with the latest ts.
  std::string latest(std::string_view column) const;
  // An integer expression: the row's ts in whole seconds since the epoch, divided by
  // `seconds` (the row's bucket number).
  std::string ts_bucket(std::chrono::seconds seconds) const;

  // Runs `select` + the WHERE clause + `rest` + " LIMIT ?" (`limit` 0: none) with the
  // WHERE parameters bound, and calls `row` on each result row.
  void each(std::string_view select, const Where& where, std::string_view rest, std::size_t limit,
            const std::function<void(const Row&)>& row);

 private:
  std::runtime_error read_error(const std::exception& e) const;
  void each_sqlite(const std::string& sql, const Where& where, std::size_t limit,
                   const std::function<void(const Row&)>& row);
  void each_postgresql(const std::string& sql, const Where& where, std::size_t limit,
                       const std::function<void(const Row&)>& row);

  std::filesystem::path path_;
  Db db_;                        // SQLite
  std::unique_ptr<PgConn> pg_;   // PostgreSQL
};

// A stored timestamp back as a time point; the epoch for text that is not one.
Clock::time_point stored_time(const std::string& text);

}  // namespace netbox::audit::detail
