#include "reader.hpp"

#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "pg_schema.hpp"
#include "timestamp.hpp"

namespace netbox::audit::detail {
namespace {

// "a = ? AND b = ?" -> "a = $1 AND b = $2": the readers' SQL holds no ? of its own.
std::string numbered(const std::string& sql) {
  std::string out;
  int n = 0;
  for (const char c : sql) {
    if (c == '?') out += "$" + std::to_string(++n);
    else out += c;
  }
  return out;
}

}  // namespace

void Where::add(std::string_view condition, std::string value) {
  sql += sql.empty() ? " WHERE " : " AND ";
  sql += condition;
  params.push_back(std::move(value));
}

std::string glob_to_regex(std::string_view glob) {
  std::string out = "^";
  for (std::size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*') {
      out += ".*";
    } else if (c == '?') {
      out += '.';
    } else if (c == '[') {
      // A class runs to the next ']' that is not its first member; unclosed, '[' is literal
      // (SQLite then matches nothing, which an anchored literal '[' nearly always does too).
      std::size_t j = i + 1;
      if (j < glob.size() && glob[j] == '^') ++j;
      if (j < glob.size() && glob[j] == ']') ++j;
      while (j < glob.size() && glob[j] != ']') ++j;
      if (j >= glob.size()) {
        out += "\\[";
        continue;
      }
      out += '[';
      std::size_t k = i + 1;
      if (glob[k] == '^') {
        out += '^';
        ++k;
      }
      for (; k < j; ++k) {
        // Inside a bracket expression only these mean something to POSIX regexes.
        if (glob[k] == '\\') out += "\\\\";
        else if (glob[k] == '[' && k + 1 < j && (glob[k + 1] == ':' || glob[k + 1] == '.' || glob[k + 1] == '=')) out += "\\[";
        else out += glob[k];
      }
      out += ']';
      i = j;
    } else if (std::string_view("\\.^$|()+{}]").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "$";
}

Reader::Reader(const std::filesystem::path& db) : path_(db) {
  if (is_postgresql(db.native())) pg_ = open_postgresql_for_reading(db.native());
  else db_.reset(open_for_reading(db));
}

Reader::~Reader() = default;

void Reader::snapshot() {
  try {
    if (pg_) {
      pg_->exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    } else {
      exec(db_.get(), "BEGIN");
      // A deferred transaction takes its snapshot at the first read: take it now.
      Statement first(db_.get(), "SELECT COUNT(*) FROM sqlite_schema");
      first.step();
    }
  } catch (const std::exception& e) {
    throw read_error(e);
  }
}

bool Reader::has_table(const std::string& name) {
  Where w;
  w.add(pg_ ? "tablename = ?" : "name = ?", name);
  bool found = false;
  each(pg_ ? "SELECT 1 FROM pg_tables" : "SELECT 1 FROM sqlite_schema", w,
       pg_ ? " AND schemaname = current_schema()" : " AND type = 'table'", 1, [&](const Row&) { found = true; });
  return found;
}

// --exe: a path is the executable itself; a bare name ("curl", or "unknown") is that
// name or that file name in any folder.
void Reader::add_exe_condition(Where& w, const std::string& exe) const {
  if (exe.find('/') != std::string::npos) return w.add("client_exe = ?", exe);
  std::string glob = "*/";
  for (char c : exe) {
    if (c == '*' || c == '?' || c == '[') glob += std::string("[") + c + "]";
    else glob += c;
  }
  w.add(pg_ ? "(client_exe = ? OR client_exe ~ ?)" : "(client_exe = ? OR client_exe GLOB ?)", exe);
  w.params.push_back(pg_ ? glob_to_regex(glob) : glob);
}

Where Reader::where(const Filter& f) const {
  Where w;
  if (f.agent) w.add("agent = ?", *f.agent);
  if (f.decision) w.add("decision = ?", *f.decision);
  if (f.host_glob) {
    if (pg_) w.add("host ~ ?", glob_to_regex(*f.host_glob));
    else w.add("host GLOB ?", *f.host_glob);
  }
  if (f.exe) add_exe_condition(w, *f.exe);
  // Stored timestamps share one fixed-width format, so text order is time order.
  if (f.since) w.add("ts >= ?", format_timestamp(*f.since));
  return w;
}

std::string Reader::latest(std::string_view column) const {
  // SQLite takes a bare column from the row holding the one MAX() of the query.
  if (!pg_) return std::string(column);
  return "(array_agg(" + std::string(column) + " ORDER BY ts DESC, id DESC))[1]";
}

std::string Reader::ts_bucket(std::chrono::seconds seconds) const {
  // ts is stored as ISO-8601 text ("2026-11-22T04:15:41.123Z") by both backends.
  const std::string n = std::to_string(std::max<std::int64_t>(1, seconds.count()));
  if (!pg_) return "(CAST(strftime('%s', ts) AS INTEGER) / " + n + ")";
  return "CAST(floor(extract(epoch FROM CAST(ts AS timestamptz)) / " + n + ") AS bigint)";
}

void Reader::each(std::string_view select, const Where& where, std::string_view rest, std::size_t limit,
                  const std::function<void(const Row&)>& row) {
  const std::string sql = std::string(select) + where.sql + std::string(rest) + " LIMIT ?";
  if (pg_) each_postgresql(sql, where, limit, row);
  else each_sqlite(sql, where, limit, row);
}

void Reader::each_sqlite(const std::string& sql, const Where& where, std::size_t limit,
                         const std::function<void(const Row&)>& row) {
  try {
    Statement s(db_.get(), sql);
    int i = 1;
    for (const auto& p : where.params) s.bind(i++, p);
    // SQLite reads a negative LIMIT as "no limit".
    s.bind(i, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
    while (s.step()) row(s);
  } catch (const SqliteError& e) {
    throw read_error(e);
  }
}

void Reader::each_postgresql(const std::string& sql, const Where& where, std::size_t limit,
                             const std::function<void(const Row&)>& row) {
  PgParams params(where.params.begin(), where.params.end());
  for (auto& p : params) p = pg_text(*p);
  // LIMIT NULL is no limit.
  params.push_back(limit == 0 ? std::nullopt : std::optional<std::string>(std::to_string(limit)));
  PgResult r;
  try {
    r = pg_->query(numbered(sql), params);
  } catch (const PgError& e) {
    throw read_error(e);
  }
  for (int i = 0; i < PQntuples(r.get()); ++i) row(PgRow(r.get(), i));
}

std::runtime_error Reader::read_error(const std::exception& e) const {
  return std::runtime_error("cannot read audit database " + path_.string() + ": " + e.what());
}

Clock::time_point stored_time(const std::string& text) { return parse_iso8601(text).value_or(Clock::time_point{}); }

}  // namespace netbox::audit::detail
