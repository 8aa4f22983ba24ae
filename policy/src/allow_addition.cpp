#include "netbox/policy/allow_addition.hpp"

#include "netbox/policy/json_file.hpp"
#include "netbox/policy/load.hpp"

#include "json_positions.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace netbox::policy {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& why) {
  throw std::runtime_error(file.string() + ": " + why);
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` beside `file` with its mode and owner; returns the new file's path.
std::filesystem::path write_beside(const std::filesystem::path& file, const std::string& text) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) fail(file, std::strerror(errno));
  const std::filesystem::path tmp = file.string() + ".netbox-new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) fail(tmp, std::strerror(errno));
  bool ok = ::fchmod(fd, st.st_mode & 07777) == 0 &&
            (::fchown(fd, st.st_uid, st.st_gid) == 0 || (st.st_uid == ::geteuid() && st.st_gid == ::getegid())) &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    fail(tmp, std::strerror(saved));
  }
  return tmp;
}

// The policy's folder, locked (flock) while one netbox reads, changes and renames the
// file: two launches sharing a policy file may both be answered "add to the policy" at
// once, and would otherwise write one temporary file together or lose one entry. The
// folder, not the file: the rename replaces the file's inode under a waiting lock.
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& file) {
    const auto folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) fail(file, "cannot open its folder to lock it: " + std::string(std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) {
        const int e = errno;
        ::close(fd_);
        fail(file, "cannot lock its folder: " + std::string(std::strerror(e)));
      }
  }
  ~FolderLock() { ::close(fd_); }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

void add_allow_entry(const std::filesystem::path& file, const std::string& profile, const std::string& entry) {
  const FolderLock locked(file);
  const std::string text = read_text(file);
  JsonFile parsed(text, file.string());
  const std::string pointer = profile.empty() ? "/allow" : JsonFile::child(JsonFile::child("/agents", profile), "allow");
  const auto list = parsed.json().contains(nlohmann::json::json_pointer(pointer))
                        ? parsed.json().at(nlohmann::json::json_pointer(pointer))
                        : nlohmann::json();
  if (!list.is_array())
    fail(file, "has no \"allow\" list " + (profile.empty() ? std::string("at the top level") : "for agents." + profile) +
                   " to add " + entry + " to");
  for (const auto& e : list)
    if (e.is_string() && e.get<std::string>() == entry) return;
  const std::size_t at = parsed.positions().value_offset(pointer);
  if (at == std::string::npos || at >= text.size() || text[at] != '[') fail(file, "cannot find its allow list in the text");
  const std::string added = "\"" + entry + "\"" + (list.empty() ? "" : ", ");
  const std::string next = text.substr(0, at + 1) + added + text.substr(at + 1);
  const auto tmp = write_beside(file, next);
  try {
    (void)load_policy_file(tmp);  // what the proxy will load: nothing that fails replaces the file
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(file, std::strerror(e));
  }
}

}  // namespace netbox::policy
