#pragma once
// Thin RAII over libpq, private to the audit module: one connection, errors as exceptions
// whose message is the server's (never the connection string: it may name a service file
// or a user, and netbox refuses one with a password in it, see store_address.hpp).
#include "row.hpp"

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

class PgError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PgResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultFree>;

// Parameters are text (or NULL); PostgreSQL infers their types from the statement.
using PgParams = std::vector<std::optional<std::string>>;

class PgConn {
 public:
  // Connects (connect_timeout 5 s unless the address sets one, client_encoding UTF8).
  // Throws PgError with libpq's message.
  explicit PgConn(std::string address);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  bool connected() const;
  // Drops the connection and makes a new one; throws PgError if that fails.
  void reconnect();

  // Ends an open transaction, if the connection still has one; never throws.
  void rollback() noexcept;

  // One or more statements without parameters and without results we need.
  void exec(const std::string& sql);
  // One statement with $1.. parameters; returns its rows (or none).
  PgResult query(const std::string& sql, const PgParams& params = {});
  // What feeds a COPY ... FROM STDIN: calls `put` with its data in as many pieces as it
  // likes (the server takes each in while the next is made), given the results of the
  // statements before it that returned rows.
  using CopyPut = std::function<void(std::string_view)>;
  using CopyFeed = std::function<void(const std::vector<PgResult>& rows, const CopyPut& put)>;
  // Several statements in one message, so one round trip for all of them (the simple-query
  // protocol: no parameters, values as append_sql_literal()s). The n-th COPY ... FROM STDIN
  // among them is fed by feeds[n]. Returns the results of the statements that return rows, in
  // order. Throws PgError at the first statement that fails (the server runs none after it,
  // and the transaction, if one is open, is then aborted); a feed that throws ends its COPY
  // as failed, and what it threw is rethrown.
  std::vector<PgResult> script(const std::string& sql, const std::vector<CopyFeed>& feeds = {});
  // libpq's own handle, for LISTEN's socket and notifications (policy_store.cpp).
  PGconn* native() const { return conn_; }

 private:
  void connect();
  [[noreturn]] void fail(std::string_view context, const PGresult* result = nullptr);

  std::string address_;
  PGconn* conn_ = nullptr;
};

// Appends `text` to a COPY text-format field. Bytes PostgreSQL's UTF-8 text cannot hold
// (a NUL, a byte that is not UTF-8) are stored as the four characters \xNN, as `netbox
// audit` shows them anyway: an agent's bytes must never make the store refuse a batch.
void append_copy_text(std::string& out, std::string_view text);
// `text` (pg_text'd) as an SQL string literal, E'...', for script(): right whatever the
// server's standard_conforming_strings.
void append_sql_literal(std::string& out, std::string_view text);
// The same replacement without COPY's escaping, for a parameter.
std::string pg_text(std::string_view text);
// pg_text appended to `out`: text as PostgreSQL stores it, whichever backend is in use.
// The audit chain encodes every text value through it (chain.cpp), so the value a writer
// binds and the value a reader gets back from either store encode alike.
void append_pg_text(std::string& out, std::string_view text);

// One field of a result row (a bytea field: its bytes).
std::string pg_value(const PGresult* r, int row, int column);

// One row of a result, as the readers see rows.
class PgRow final : public Row {
 public:
  PgRow(const PGresult* r, int row) : r_(r), row_(row) {}
  bool is_null(int column) const override { return PQgetisnull(r_, row_, column); }
  std::int64_t column_int(int column) const override {
    if (is_null(column)) return 0;
    // SUM over bigint is numeric in PostgreSQL: digits, no fraction.
    return std::stoll(pg_value(r_, row_, column));
  }
  std::string column_text(int column) const override { return is_null(column) ? std::string() : pg_value(r_, row_, column); }

 private:
  const PGresult* r_;
  int row_;
};

}  // namespace netbox::audit::detail
