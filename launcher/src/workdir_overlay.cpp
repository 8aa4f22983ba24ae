#include "netbox/launcher/workdir_overlay.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace netbox::launcher {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::vector<std::string> entries(int dir_fd, const std::string& path) {
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open", path);
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    fail("opendir", path);
  }
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// The host's workdir's file system: the agent saw only that one (an overlay's lower
// layer has no submounts), so the commit never changes anything on another, e.g. a
// folder mounted inside the workdir whose contents an empty-looking whiteout would erase.
dev_t workdir_dev = 0;

void require_same_file_system(const struct stat& st, const std::string& path) {
  if (st.st_dev == workdir_dev) return;
  errno = EXDEV;
  fail("refusing to change another file system mounted at", path);
}

void remove_tree(int parent, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    fail("stat", path);
  }
  require_same_file_system(st, path);
  if (S_ISDIR(st.st_mode)) {
    Fd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) fail("open", path);
    struct stat inside {};
    if (::fstat(dir.get(), &inside) != 0) fail("stat", path);
    require_same_file_system(inside, path);  // a mount point
    for (const auto& child : entries(dir.get(), path)) remove_tree(dir.get(), child, path + "/" + child);
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) fail("rmdir", path);
  } else if (::unlinkat(parent, name.c_str(), 0) != 0) {
    fail("unlink", path);
  }
}

void set_owner_mode_times(int fd, const struct stat& st, const std::string& path) {
  if (::fchown(fd, st.st_uid, st.st_gid) != 0) fail("chown", path);
  if (::fchmod(fd, st.st_mode & 01777) != 0) fail("chmod", path);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::futimens(fd, times) != 0) fail("utimens", path);
}

void copy_file(int upper, int host, const std::string& name, const struct stat& st, const std::string& path) {
  // A new inode each time: never written through a host file's other hard links.
  remove_tree(host, name, path);
  Fd src(::openat(upper, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (src.get() < 0) fail("open", path);
  Fd dst(::openat(host, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (dst.get() < 0) fail("create", path);
  // Only the data is copied, holes stay holes: a sparse file the quota held (its
  // blocks are few) must not become gigabytes of zeros on the host.
  off_t offset = 0;
  while (offset < st.st_size) {
    off_t data = ::lseek(src.get(), offset, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) fail("seek", path);
    off_t hole = ::lseek(src.get(), data, SEEK_HOLE);
    if (hole < 0) fail("seek", path);
    off_t at = data;
    if (::lseek(dst.get(), data, SEEK_SET) < 0) fail("seek", path);
    while (at < hole) {
      ssize_t n = ::sendfile(dst.get(), src.get(), &at, static_cast<std::size_t>(hole - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("copy", path);
    }
    offset = hole;
  }
  if (::ftruncate(dst.get(), st.st_size) != 0) fail("truncate", path);
  set_owner_mode_times(dst.get(), st, path);
}

void commit_dir(int upper, int host, const std::string& path) {
  for (const auto& name : entries(upper, path)) {
    const std::string child = path + "/" + name;
    struct stat st {};
    if (::fstatat(upper, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail("stat", child);
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) {
      remove_tree(host, name, child);  // a whiteout: the agent deleted it
    } else if (S_ISDIR(st.st_mode)) {
      Fd up(::openat(upper, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (up.get() < 0) fail("open", child);
      char opaque = 0;
      const bool replaced = ::fgetxattr(up.get(), "trusted.overlay.opaque", &opaque, 1) == 1 && opaque == 'y';
      struct stat hs {};
      const bool there = ::fstatat(host, name.c_str(), &hs, AT_SYMLINK_NOFOLLOW) == 0;
      if (there && (replaced || !S_ISDIR(hs.st_mode))) remove_tree(host, name, child);
      if ((!there || replaced || !S_ISDIR(hs.st_mode)) && ::mkdirat(host, name.c_str(), 0700) != 0) fail("mkdir", child);
      Fd down(::openat(host, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (down.get() < 0) fail("open", child);
      struct stat inside {};
      if (::fstat(down.get(), &inside) != 0) fail("stat", child);
      require_same_file_system(inside, child);
      commit_dir(up.get(), down.get(), child);
      set_owner_mode_times(down.get(), st, child);
    } else if (S_ISREG(st.st_mode)) {
      copy_file(upper, host, name, st, child);
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
      ssize_t n = ::readlinkat(upper, name.c_str(), target.data(), target.size());
      if (n < 0) fail("readlink", child);
      remove_tree(host, name, child);
      if (::symlinkat(std::string(target.data(), static_cast<std::size_t>(n)).c_str(), host, name.c_str()) != 0)
        fail("symlink", child);
      if (::fchownat(host, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0) fail("chown", child);
    }
    // FIFOs and sockets are left behind with the namespace.
  }
}

}  // namespace

std::uint64_t overlay_bytes_written(int upper_fd) {
  struct statfs s {};
  if (::fstatfs(upper_fd, &s) != 0) return 0;
  return static_cast<std::uint64_t>(s.f_blocks - s.f_bfree) * static_cast<std::uint64_t>(s.f_bsize);
}

void commit_overlay(int upper_fd, int host_fd) {
  struct stat st {};
  if (::fstat(host_fd, &st) != 0) fail("stat", ".");
  workdir_dev = st.st_dev;
  commit_dir(upper_fd, host_fd, ".");
}

}  // namespace netbox::launcher
