#pragma once
// The schema's history: step N brings a database from user_version N-1 to N.
#include <span>

namespace netbox::audit::detail {

// Both backends' schemas are here, step by step. SQLite stores its version in PRAGMA
// user_version; PostgreSQL in the table netbox_schema. A PostgreSQL store starts at
// kPostgresBaseline: the steps before it have no PostgreSQL text.
struct Migration {
  int version;             // the schema version after this step
  const char* sql;         // SQLite: applied inside one transaction together with the version bump
  const char* postgresql;  // the same step for PostgreSQL, or nullptr before its baseline
  bool views;              // then (re)create the views, views_sql(), after the step's own SQL
};

inline constexpr int kPostgresBaseline = 7;

std::span<const Migration> migrations();
// The views of the current schema, in SQL both backends run.
const char* views_sql();

}  // namespace netbox::audit::detail
