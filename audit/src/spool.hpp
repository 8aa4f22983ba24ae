#pragma once
// The local spool of a PostgreSQL store (docs/audit.md, "When the server is away"): an
// SQLite file of writer items, kept in order, that the writer fills while the server refuses
// or cannot be reached and ships to the server, oldest first, once it takes writes again.
// Only the writer thread uses it. Items are the writer's own (rows, completions, events,
// agent rows), each as one JSON text, with the handle a completion finds its row by.
#include "netbox/audit/record.hpp"
#include "sqlite.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace netbox::audit::detail {

// One spooled item, as the writer queues it (writer.cpp's Item without its markers).
struct SpooledInsert {
  std::uint64_t handle;
  AuditRecord record;  // origin settled (no origin_later)
};
struct SpooledComplete {
  std::uint64_t handle;
  Completion completion;
  // The row's id when its insert was committed before this completion was spooled: the
  // writer's handles do not outlive it, so a completion shipped after a restart finds its
  // row by this. 0: its insert is in the spool too (found by handle).
  std::int64_t row_id = 0;
};
using SpoolItem = std::variant<SpooledInsert, SpooledComplete, Event, AgentRecord, AgentExit>;

struct SpoolEntry {
  std::int64_t seq;  // its place in the spool: increasing, never reused
  SpoolItem item;
};

class Spool {
 public:
  // Creates the file 0600 (or opens it as left by an earlier run). Throws naming the path.
  Spool(std::filesystem::path path, std::uint64_t max_bytes);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends the items in one durable transaction (synchronous=FULL). false, and nothing
  // appended, when they would take the spool past max_bytes.
  bool append(const std::vector<SpoolItem>& items);
  // The oldest entries, up to `rows` request rows (and whatever else lies among them).
  std::vector<SpoolEntry> head(std::size_t rows);
  // Removes every entry up to `seq` (shipped).
  void drop_through(std::int64_t seq);

  // Names this spool in the server's shipped-up-to markers: a random text, made anew each
  // time the empty spool takes items (a key must not outlive the items it names).
  const std::string& key() const { return key_; }
  const std::filesystem::path& path() const { return path_; }
  std::uint64_t rows() const { return rows_; }    // request rows held
  std::uint64_t items() const { return items_; }  // everything held
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t max_bytes() const { return max_bytes_; }
  // The largest handle any held item carries: a restarted writer hands out larger ones.
  std::uint64_t max_handle() const { return max_handle_; }

 private:
  void recount();

  std::filesystem::path path_;
  std::uint64_t max_bytes_;
  int lock_fd_ = -1;  // flock'ed: one proxy per spool
  Db db_;
  std::string key_;
  std::uint64_t rows_ = 0;
  std::uint64_t items_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t max_handle_ = 0;
};

}  // namespace netbox::audit::detail
