#include "pg.hpp"

#include <array>

namespace netbox::audit::detail {

PgConn::PgConn(std::string address) : address_(std::move(address)) { connect(); }

PgConn::~PgConn() {
  if (conn_) PQfinish(conn_);
}

void PgConn::connect() {
  // Later keywords override earlier ones, and the address (expanded from "dbname") may set
  // its own connect_timeout; the encoding is ours, since the writer sends UTF-8.
  const std::array<const char*, 5> keys{"connect_timeout", "application_name", "dbname", "client_encoding", nullptr};
  const std::array<const char*, 5> values{"5", "netbox", address_.c_str(), "UTF8", nullptr};
  conn_ = PQconnectdbParams(keys.data(), values.data(), 1);
  if (!conn_) throw PgError("cannot connect to PostgreSQL: out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    PQfinish(conn_);
    conn_ = nullptr;
    throw PgError("cannot connect to PostgreSQL: " + why);
  }
}

bool PgConn::connected() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

void PgConn::reconnect() {
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
  connect();
}

void PgConn::rollback() noexcept {
  if (connected() && PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
}

void PgConn::fail(std::string_view context, const PGresult* result) {
  std::string why = result ? PQresultErrorMessage(result) : "";
  if (why.empty() && conn_) why = PQerrorMessage(conn_);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  throw PgError(std::string(context) + ": " + why);
}

void PgConn::exec(const std::string& sql) {
  if (!conn_) fail("no connection to PostgreSQL");
  PgResult r(PQexec(conn_, sql.c_str()));
  const auto status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("PostgreSQL", r.get());
}

PgResult PgConn::query(const std::string& sql, const PgParams& params) {
  if (!conn_) fail("no connection to PostgreSQL");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
  const auto status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("PostgreSQL", r.get());
  return r;
}

std::vector<PgResult> PgConn::script(const std::string& sql, const std::vector<CopyFeed>& feeds) {
  if (!conn_) fail("no connection to PostgreSQL");
  if (PQsendQuery(conn_, sql.c_str()) != 1) fail("sending to PostgreSQL");
  std::vector<PgResult> rows;
  PgResult failed;
  std::size_t copies = 0;
  const CopyPut put = [this](std::string_view data) {
    if (!data.empty() && PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) != 1)
      fail("sending rows to PostgreSQL");
  };
  while (PgResult r{PQgetResult(conn_)}) {
    switch (PQresultStatus(r.get())) {
      case PGRES_TUPLES_OK: rows.push_back(std::move(r)); break;
      case PGRES_COMMAND_OK: break;
      case PGRES_COPY_IN:
        try {
          if (copies < feeds.size() && feeds[copies]) feeds[copies](rows, put);
          ++copies;
        } catch (...) {
          // The server drops what it took of this COPY; the connection stays usable.
          PQputCopyEnd(conn_, "netbox: the batch was abandoned");
          while (PgResult rest{PQgetResult(conn_)}) {
          }
          throw;
        }
        if (PQputCopyEnd(conn_, nullptr) != 1) fail("sending rows to PostgreSQL");
        break;
      default:
        // The first failure is the one to report; the rest are read off the connection.
        if (!failed) failed = std::move(r);
    }
  }
  if (failed) fail("PostgreSQL", failed.get());
  if (PQstatus(conn_) != CONNECTION_OK) fail("PostgreSQL");
  return rows;
}

namespace {

// The length of the UTF-8 sequence at `s` (1-4), or 0 when it is not one PostgreSQL
// accepts (overlong forms, surrogates and values past U+10FFFF are refused as SQLite's
// readers would show them: byte by byte).
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0x01 && c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;
    if (c == 0xED && b(1) >= 0xA0) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;
    if (c == 0xF4 && b(1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

template <class Put>
void each_safe_piece(std::string_view text, Put&& put) {
  static constexpr char kHex[] = "0123456789abcdef";
  while (!text.empty()) {
    const std::size_t n = utf8_length(text);
    if (n == 0) {
      const auto c = static_cast<unsigned char>(text[0]);
      const char escaped[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      put(std::string_view(escaped, 4), true);
      text.remove_prefix(1);
    } else {
      put(text.substr(0, n), false);
      text.remove_prefix(n);
    }
  }
}

// ASCII without NUL: as PostgreSQL stores it.
bool is_plain(std::string_view text) {
  for (const char c : text)
    if (c == 0 || static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

void append_copy_text(std::string& out, std::string_view text) {
  each_safe_piece(text, [&out](std::string_view piece, bool) {
    for (const char c : piece) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: out += c;
      }
    }
  });
}

void append_sql_literal(std::string& out, std::string_view text) {
  // Doubled: the one escape a backslash or a quote needs in E''.
  const auto put = [&out](std::string_view piece) {
    for (const char c : piece) {
      if (c == '\\' || c == '\'') out += c;
      out += c;
    }
  };
  out += "E'";
  if (is_plain(text)) put(text);
  else each_safe_piece(text, [&put](std::string_view piece, bool) { put(piece); });
  out += '\'';
}

void append_pg_text(std::string& out, std::string_view text) {
  // Most text is printable ASCII: one scan, one append.
  if (is_plain(text)) {
    out += text;
    return;
  }
  each_safe_piece(text, [&out](std::string_view piece, bool) { out += piece; });
}

std::string pg_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_pg_text(out, text);
  return out;
}

std::string pg_value(const PGresult* r, int row, int column) {
  // bytea (the audit chain's hashes) as its bytes, as SQLite gives a BLOB's.
  constexpr Oid kBytea = 17;
  if (PQftype(r, column) == kBytea && !PQgetisnull(r, row, column)) {
    std::size_t n = 0;
    unsigned char* bytes = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r, row, column)), &n);
    if (!bytes) throw PgError("out of memory decoding a bytea value");
    std::string out(reinterpret_cast<const char*>(bytes), n);
    PQfreemem(bytes);
    return out;
  }
  return std::string(PQgetvalue(r, row, column), static_cast<std::size_t>(PQgetlength(r, row, column)));
}

}  // namespace netbox::audit::detail
