#include "netbox/policy/trusted_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace netbox::policy {
namespace {

std::string mode_text(mode_t mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", static_cast<unsigned>(mode & 07777));
  return out;
}

// Run through sudo, root works for the user who ran it (the user `netbox launch` runs the
// agent as by default): that user's files are theirs to trust, as their own are when they
// run netbox without sudo. Only root reads the variable: whoever sets it for root is root.
std::optional<unsigned> sudo_id(const char* var) {
  if (::getuid() != 0) return std::nullopt;
  const char* text = std::getenv(var);
  unsigned id = 0;
  if (!text || !*text) return std::nullopt;
  const auto [end, ec] = std::from_chars(text, text + std::strlen(text), id);
  if (ec != std::errc() || *end != '\0') return std::nullopt;
  return id;
}

bool trusted_owner(uid_t uid, const FileTrust& trust) {
  return std::find(trust.owners.begin(), trust.owners.end(), uid) != trust.owners.end();
}

// Group write is someone else's write unless the group is root's or the invoker's own.
bool foreign_group_write(const struct stat& st) {
  static const std::optional<unsigned> sudo_gid = sudo_id("SUDO_GID");
  return (st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != ::getgid() && st.st_gid != ::getegid() &&
         !(sudo_gid && st.st_gid == *sudo_gid);
}

std::string owners_text(const FileTrust& trust) {
  std::string out;
  for (uid_t u : trust.owners) {
    const auto one = "uid " + std::to_string(u);
    if (out.find(one) == std::string::npos) out += (out.empty() ? "" : " or ") + one;
  }
  return out;
}

std::optional<std::string> folder_problem(const std::filesystem::path& path, const FileTrust& trust) {
  const auto folder = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) return "cannot stat its folder " + folder.string() + ": " + std::strerror(errno);
  const bool others_write = (st.st_mode & S_IWOTH) || foreign_group_write(st);
  if (!trusted_owner(st.st_uid, trust))
    return "its folder " + folder.string() + " belongs to uid " + std::to_string(st.st_uid) +
           ", not " + owners_text(trust) + ", who could replace the file; " + trust.why;
  // In a sticky folder (/tmp) only the file's owner, the folder's and root may rename
  // over it or remove it: others can add files but not replace this one.
  if (others_write && !(st.st_mode & S_ISVTX))
    return "its folder " + folder.string() + " (mode " + mode_text(st.st_mode) +
           ") lets other users rename another file over it; " + trust.why + " (chmod go-w " + folder.string() +
           ", or move the file)";
  return std::nullopt;
}

}  // namespace

std::vector<uid_t> invoking_owners() {
  std::vector<uid_t> owners{0, ::getuid(), ::geteuid()};
  if (const auto sudo_uid = sudo_id("SUDO_UID")) owners.push_back(*sudo_uid);
  return owners;
}

std::optional<std::string> untrusted_because(int fd, const std::filesystem::path& path, const FileTrust& trust) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return std::string("not a regular file");
  if (!trusted_owner(st.st_uid, trust))
    return "owned by uid " + std::to_string(st.st_uid) + ", not " + owners_text(trust) + "; " +
           trust.why + " (chown it)";
  mode_t bad = st.st_mode & trust.forbidden;
  if (trust.own_group_may_write && !foreign_group_write(st)) bad &= ~S_IWGRP;
  if (bad) {
    const bool others = bad & (S_IWOTH | S_IROTH | S_IXOTH);
    const bool writes = bad & (S_IWOTH | S_IWGRP);
    return "mode " + mode_text(st.st_mode) + " lets " + (others ? "every local user" : "its group") +
           (writes ? " change" : " read") + " it; " + trust.why + " (chmod " +
           (writes && !(bad & (S_IRGRP | S_IROTH)) ? "go-w" : "600") + " " + path.string() + ")";
  }
  if (trust.folder) return folder_problem(path, trust);
  return std::nullopt;
}

}  // namespace netbox::policy
