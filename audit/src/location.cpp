#include "netbox/audit/location.hpp"
#include "netbox/audit/store_address.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace netbox::audit {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(std::string_view flag, const fs::path& db, const std::string& why) {
  throw DatabaseRejected(std::string(flag) + " " + db.string() + ": " + why);
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool owned_acceptably(const struct stat& st) { return st.st_uid == 0 || st.st_uid == ::geteuid(); }

void check_file(const fs::path& file, const fs::path& db, std::string_view flag) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    refuse(flag, db, "cannot inspect " + file.string() + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    refuse(flag, db, file.string() + " is not a regular file (a symbolic link or device is refused)");
  if (!owned_acceptably(st))
    refuse(flag, db, file.string() + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by root or this user, so someone else controls the audit store");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    refuse(flag, db, file.string() + " has mode " + octal(st.st_mode) +
                         ": group- or world-writable, so another user (an agent) could alter or lock it; "
                         "chmod 600 it");
}

// `inner` equals `outer` or lies below it (both absolute and normal).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

fs::path default_db_path(bool root, const char* xdg_state_home, const char* home) {
  if (root) return "/var/lib/netbox/audit.db";
  // XDG: a relative XDG_STATE_HOME is invalid and ignored.
  if (xdg_state_home && *xdg_state_home == '/') return fs::path(xdg_state_home) / "netbox" / "audit.db";
  if (home && *home) return fs::path(home) / ".local" / "state" / "netbox" / "audit.db";
  return "/var/lib/netbox/audit.db";  // no home to speak of: the system place (will be checked)
}

fs::path default_db_path() {
  return default_db_path(::geteuid() == 0, std::getenv("XDG_STATE_HOME"), std::getenv("HOME"));
}

void prepare_default_location(const fs::path& db, std::string_view flag) {
  const fs::path dir = db.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    // Parents as usual (their mode from the umask); the store's own directory 0700.
    if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      refuse(flag, db, "cannot create the directory " + dir.string() + ": " + std::strerror(errno));
    ::chmod(dir.c_str(), 0700);  // whatever the umask took away or left
  }
  check_db_location(db, flag);
}

void check_db_location(const fs::path& db, std::string_view flag, const std::optional<fs::path>& agent_workdir) {
  if (db.empty()) refuse(flag, db, "an empty path");
  // A server's address: no file here to check, only that it carries no password.
  if (is_postgresql(db.native())) return check_postgresql_address(db.native(), flag);
  std::error_code ec;
  const fs::path absolute = fs::absolute(db, ec).lexically_normal();
  const fs::path dir = absolute.parent_path();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    // Nothing can be created there either: opening the store fails and names the path.
    if (errno == ENOENT) return;
    refuse(flag, db, "its directory " + dir.string() + " cannot be used: " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) refuse(flag, db, dir.string() + " is not a directory");
  if (!owned_acceptably(st))
    refuse(flag, db, "its directory " + dir.string() + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by root or this user, so someone else could replace the audit store");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    refuse(flag, db, "its directory " + dir.string() + " has mode " + octal(st.st_mode) +
                         ": group- or world-writable, so another user (an agent) could create, replace or "
                         "lock the database, its -wal or its -shm; use a directory only its owner can write "
                         "(mode 0700), or leave the flag out for the default");
  for (const char* suffix : {"", "-wal", "-shm"}) check_file(absolute.string() + suffix, db, flag);
  if (agent_workdir) {
    const fs::path work = fs::weakly_canonical(fs::absolute(*agent_workdir, ec), ec).lexically_normal();
    const fs::path real_dir = fs::weakly_canonical(dir, ec).lexically_normal();
    if (work != fs::path("/") && is_within(real_dir, work))
      refuse(flag, db, "it is inside the agent's working directory " + work.string() +
                           ", where the agent could reach the database, its -wal and its -shm; "
                           "put it elsewhere, or leave the flag out for the default");
  }
}

}  // namespace netbox::audit
