// The spool's file: table items (seq, is_row, handle, body) in the order the writer queued
// them, AUTOINCREMENT so that a seq is never used twice (the server's shipped-up-to marker
// names one), and meta (the spool's key). Written with synchronous=FULL: an item the writer
// reports durable (--audit-sync) is on disk.
#include "spool.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/audit/spool_summary.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <random>
#include <stdexcept>

namespace netbox::audit::detail {
namespace {

using nlohmann::json;

std::int64_t ns(Clock::time_point t) { return t.time_since_epoch().count(); }
Clock::time_point at(std::int64_t n) { return Clock::time_point(Clock::duration(n)); }

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <class T>
std::optional<T> opt_of(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}

json to_json(const SpooledInsert& x) {
  const AuditRecord& r = x.record;
  return {{"t", "insert"}, {"handle", x.handle}, {"ts", ns(r.ts)}, {"agent", r.agent},
          {"client_addr", r.client_addr}, {"kind", r.kind}, {"method", r.method}, {"host", r.host},
          {"port", r.port}, {"path", r.path}, {"resolved_addr", r.resolved_addr}, {"decision", r.decision},
          {"rule", r.rule}, {"reason", r.reason}, {"status", opt(r.status)}, {"bytes_up", r.bytes_up},
          {"bytes_down", r.bytes_down}, {"duration_ms", opt(r.duration_ms)}, {"error", r.error},
          {"count", r.count}, {"parent", r.parent}, {"pid", opt(r.origin.pid)}, {"exe", r.origin.exe},
          {"argv", r.origin.argv}};
}
json to_json(const SpooledComplete& x) {
  const Completion& c = x.completion;
  return {{"t", "complete"}, {"handle", x.handle}, {"status", opt(c.status)}, {"bytes_up", c.bytes_up},
          {"bytes_down", c.bytes_down}, {"duration_ms", c.duration_ms}, {"resolved_addr", c.resolved_addr},
          {"error", c.error}, {"decision", c.decision}, {"rule", c.rule}, {"reason", c.reason},
          {"row_id", x.row_id}};
}
json to_json(const Event& e) {
  return {{"t", "event"}, {"ts", ns(e.ts)}, {"kind", e.kind}, {"message", e.message}, {"detail", e.detail},
          {"agent", e.agent}, {"fold_key", e.fold_key}, {"count", e.count}};
}
json to_json(const AgentRecord& a) {
  return {{"t", "agent"}, {"name", a.name}, {"pid", a.pid}, {"command_line", a.command_line},
          {"policy_digest", a.policy_digest}, {"address", a.address}, {"started", ns(a.started)},
          {"sandbox", a.sandbox}};
}
json to_json(const AgentExit& x) {
  return {{"t", "exit"}, {"name", x.name}, {"pid", x.pid}, {"ended", ns(x.ended)},
          {"exit_status", opt(x.exit_status)}, {"resource_usage", x.resource_usage}};
}

SpoolItem from_json(const json& j) {
  const std::string t = j.at("t");
  if (t == "insert") {
    SpooledInsert x{j.at("handle"), {}};
    AuditRecord& r = x.record;
    r.ts = at(j.at("ts"));
    r.agent = j.at("agent");
    r.client_addr = j.at("client_addr");
    r.kind = j.at("kind");
    r.method = j.at("method");
    r.host = j.at("host");
    r.port = j.at("port");
    r.path = j.at("path");
    r.resolved_addr = j.at("resolved_addr");
    r.decision = j.at("decision");
    r.rule = j.at("rule");
    r.reason = j.at("reason");
    r.status = opt_of<int>(j.at("status"));
    r.bytes_up = j.at("bytes_up");
    r.bytes_down = j.at("bytes_down");
    r.duration_ms = opt_of<std::int64_t>(j.at("duration_ms"));
    r.error = j.at("error");
    r.count = j.at("count");
    r.parent = j.at("parent");
    r.origin.pid = opt_of<std::int64_t>(j.at("pid"));
    r.origin.exe = j.at("exe");
    r.origin.argv = j.at("argv");
    return x;
  }
  if (t == "complete") {
    SpooledComplete x{j.at("handle"), {}};
    Completion& c = x.completion;
    c.status = opt_of<int>(j.at("status"));
    c.bytes_up = j.at("bytes_up");
    c.bytes_down = j.at("bytes_down");
    c.duration_ms = j.at("duration_ms");
    c.resolved_addr = j.at("resolved_addr");
    c.error = j.at("error");
    c.decision = j.at("decision");
    c.rule = j.at("rule");
    c.reason = j.at("reason");
    x.row_id = j.value("row_id", std::int64_t{0});  // absent in a spool of an older netbox
    return x;
  }
  if (t == "event") {
    Event e(at(j.at("ts")), j.at("kind"), j.at("message"), j.at("detail"));
    e.agent = j.at("agent");
    e.fold_key = j.at("fold_key");
    e.count = j.at("count");
    return e;
  }
  if (t == "agent") {
    AgentRecord a;
    a.name = j.at("name");
    a.pid = j.at("pid");
    a.command_line = j.at("command_line");
    a.policy_digest = j.at("policy_digest");
    a.address = j.at("address");
    a.started = at(j.at("started"));
    a.sandbox = j.at("sandbox");
    return a;
  }
  AgentExit x;
  x.name = j.at("name");
  x.pid = j.at("pid");
  x.ended = at(j.at("ended"));
  x.exit_status = opt_of<int>(j.at("exit_status"));
  x.resource_usage = j.at("resource_usage");
  return x;
}

std::uint64_t handle_of(const SpoolItem& item) {
  if (const auto* i = std::get_if<SpooledInsert>(&item)) return i->handle;
  if (const auto* c = std::get_if<SpooledComplete>(&item)) return c->handle;
  return 0;
}

// 0600 whatever the umask, as the SQLite store's own file (schema.cpp create_private).
void create_owner_only(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // an existing spool keeps its mode (the proxy's start checks it)
  ::fchmod(fd, 0600);
  ::close(fd);
}

Db open_file(const std::filesystem::path& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK)
    throw std::runtime_error("cannot open the audit spool " + path.string() + ": " +
                             (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  return db;
}

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS items (seq INTEGER PRIMARY KEY AUTOINCREMENT, is_row INTEGER NOT NULL, "
    "handle INTEGER NOT NULL, body TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

std::string random_key() {
  std::random_device rd;
  std::string key;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(rd()));
    key += part;
  }
  return key;
}

}  // namespace

Spool::Spool(std::filesystem::path path, std::uint64_t max_bytes) : path_(std::move(path)), max_bytes_(max_bytes) {
  create_owner_only(path_);
  // One proxy per spool: two would ship each other's rows under their own proxy ids.
  lock_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (lock_fd_ >= 0 && ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  if (lock_fd_ < 0)
    throw std::runtime_error("the audit spool " + path_.string() +
                             " is in use by another netbox proxy (or cannot be opened); each proxy needs its own "
                             "--audit-spool");
  db_ = open_file(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW);
  try {
    exec(db_.get(), "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;");
    exec(db_.get(), kSchema);
    Statement get(db_.get(), "SELECT value FROM meta WHERE key = 'key'");
    if (get.step()) {
      key_ = get.column_text(0);
    } else {
      key_ = random_key();
      Statement put(db_.get(), "INSERT INTO meta (key, value) VALUES ('key', ?1)");
      put.bind(1, std::string_view(key_));
      put.step();
    }
    recount();
  } catch (const std::exception& e) {
    throw std::runtime_error("audit spool " + path_.string() + ": " + e.what());
  }
}

Spool::~Spool() {
  db_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void Spool::recount() {
  Statement count(db_.get(),
                  "SELECT COUNT(*), COALESCE(SUM(is_row), 0), COALESCE(SUM(length(CAST(body AS BLOB))), 0), "
                  "COALESCE(MAX(handle), 0) FROM items");
  count.step();
  items_ = static_cast<std::uint64_t>(count.column_int(0));
  rows_ = static_cast<std::uint64_t>(count.column_int(1));
  bytes_ = static_cast<std::uint64_t>(count.column_int(2));
  max_handle_ = std::max(max_handle_, static_cast<std::uint64_t>(count.column_int(3)));
}

bool Spool::append(const std::vector<SpoolItem>& items) {
  std::vector<std::string> bodies;
  bodies.reserve(items.size());
  std::uint64_t more = 0;
  for (const SpoolItem& item : items) {
    bodies.push_back(std::visit([](const auto& x) { return to_json(x); }, item)
                         .dump(-1, ' ', false, json::error_handler_t::replace));
    more += bodies.back().size();
  }
  if (bytes_ + more > max_bytes_) return false;
  // An empty spool starting again gets a new key: what it ships is found by its key alone
  // (a renamed host keeps finding its own), so a key must not outlive the items it names;
  // spool files copied with a host image would otherwise drop each other's rows.
  const std::string key = items_ == 0 ? random_key() : key_;
  exec(db_.get(), "BEGIN IMMEDIATE");
  try {
    if (key != key_) {
      Statement rekey(db_.get(), "UPDATE meta SET value = ?1 WHERE key = 'key'");
      rekey.bind(1, std::string_view(key));
      rekey.step();
    }
    Statement put(db_.get(), "INSERT INTO items (is_row, handle, body) VALUES (?1, ?2, ?3)");
    std::uint64_t rows = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool row = std::holds_alternative<SpooledInsert>(items[i]);
      rows += row;
      const std::uint64_t handle = handle_of(items[i]);
      max_handle_ = std::max(max_handle_, handle);
      put.bind(1, std::int64_t{row});
      put.bind(2, static_cast<std::int64_t>(handle));
      put.bind_view(3, bodies[i]);
      put.step();
      put.reset();
    }
    exec(db_.get(), "COMMIT");
    key_ = key;
    rows_ += rows;
    items_ += items.size();
    bytes_ += more;
  } catch (...) {
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return true;
}

std::vector<SpoolEntry> Spool::head(std::size_t rows) {
  std::vector<SpoolEntry> out;
  Statement get(db_.get(), "SELECT seq, is_row, body FROM items ORDER BY seq");
  std::size_t taken = 0;
  while (get.step()) {
    const bool row = get.column_int(1) != 0;
    if (row && taken == rows) break;
    taken += row;
    const std::int64_t seq = get.column_int(0);
    try {
      out.push_back({seq, from_json(json::parse(get.column_text(2)))});
    } catch (const std::exception& e) {
      // A body that does not read back (a damaged file, one written by another version, a
      // hand edit): shipped as an event saying so, in its place, rather than stopping the
      // writer or silently skipping a row. Its text is not repeated: it may hold anything.
      const json detail{{"spool", path_.string()}, {"seq", seq}, {"error", e.what()}};
      SpoolEntry lost{seq, SpoolItem(std::in_place_type<Event>)};
      auto& ev = std::get<Event>(lost.item);
      ev.ts = Clock::now();
      ev.kind = "audit_spool_unreadable";
      ev.message = "item " + std::to_string(seq) + " of the local spool " + path_.string() +
                   " could not be read and is lost: " + e.what();
      ev.detail = detail.dump(-1, ' ', false, json::error_handler_t::replace);
      out.push_back(std::move(lost));
    }
  }
  return out;
}

void Spool::drop_through(std::int64_t seq) {
  Statement drop(db_.get(), "DELETE FROM items WHERE seq <= ?1");
  drop.bind(1, seq);
  drop.step();
  recount();
}

}  // namespace netbox::audit::detail

namespace netbox::audit {

std::filesystem::path default_spool_path(const std::string& proxy_id) {
  std::string name = "audit-spool-";
  for (const char c : proxy_id) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return default_db_path().parent_path() / (name + ".db");
}

std::optional<SpoolSummary> read_spool_summary(const std::filesystem::path& path) {
  using namespace detail;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  Db db = open_file(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW);
  Statement count(db.get(), "SELECT COUNT(*), COALESCE(SUM(is_row), 0), COALESCE(SUM(length(CAST(body AS BLOB))), 0) FROM items");
  count.step();
  return SpoolSummary{static_cast<std::uint64_t>(count.column_int(1)), static_cast<std::uint64_t>(count.column_int(0)),
                      static_cast<std::uint64_t>(count.column_int(2))};
}

}  // namespace netbox::audit
