#pragma once
// A PostgreSQL store's local spool (docs/audit.md, "When the server is away: the local
// spool"), from outside the proxy that fills it: where it is by default, and what it holds.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace netbox::audit {

// audit-spool-PROXYID.db beside the default SQLite store (default_db_path), the proxy id's
// characters other than letters, digits, '-' and '.' as '_'.
std::filesystem::path default_spool_path(const std::string& proxy_id);

struct SpoolSummary {
  std::uint64_t rows = 0;   // request rows not yet shipped
  std::uint64_t items = 0;  // with the events, completions and agent rows among them
  std::uint64_t bytes = 0;
};
// Read-only; nullopt when there is no such file. Throws naming the file when it is not a spool.
std::optional<SpoolSummary> read_spool_summary(const std::filesystem::path& path);

}  // namespace netbox::audit
