#include "jsonl_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace netbox::siem {
namespace {

// The audit store's rule (audit/src/schema.cpp create_private): 0640 in the folder's group
// when the folder lets its group in and no one else write, else 0600; never for others.
mode_t private_mode(int fd, const std::filesystem::path& path) {
  struct stat dir {};
  const auto parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (::stat(parent.c_str(), &dir) == 0 && (dir.st_mode & S_IXGRP) && !(dir.st_mode & (S_IWGRP | S_IWOTH)) &&
      ::fchown(fd, static_cast<uid_t>(-1), dir.st_gid) == 0)
    return 0640;
  return 0600;
}

}  // namespace

JsonlSink::JsonlSink(std::string name, std::filesystem::path path) : Sink(std::move(name)), path_(std::move(path)) {
  open();
  if (fd_ < 0) throw std::runtime_error(path_.string() + ": " + std::strerror(errno));
}

JsonlSink::~JsonlSink() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

void JsonlSink::open() {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return;
  }
  // A new file gets the store's mode; an existing one (rotated in by logrotate's create, or
  // left by an older run) is narrowed to it, never widened.
  const mode_t cur = st.st_mode & 07777;
  const mode_t want = st.st_size == 0 ? private_mode(fd, path_) : (cur & private_mode(fd, path_));
  if (cur != want) ::fchmod(fd, want);
  if (st.st_size == 0) line_open_ = false;  // a new file (logrotate moved the old one)
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void JsonlSink::put(const nlohmann::json& record) {
  pending_ += record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  pending_ += '\n';
  ++pending_records_;
  if (pending_.size() >= 64 * 1024) flush();
}

// What write() took of `text` before it stopped (a full disk, a file size limit).
std::size_t JsonlSink::write_some(std::string_view text) {
  std::size_t done = 0;
  while (fd_ >= 0 && done < text.size()) {
    const auto n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

// Records whose line was written whole are exported, the rest dropped. A write that
// stopped partway left a line unfinished; the next write starts with a newline, so a
// reader loses that one record, not the next one glued to it.
void JsonlSink::flush() {
  if (pending_.empty()) return;
  const std::size_t lead = line_open_ ? 1 : 0;
  if (line_open_) pending_.insert(0, 1, '\n');
  const std::size_t done = write_some(pending_);
  if (done > 0) line_open_ = pending_[done - 1] != '\n';
  const auto whole = static_cast<std::size_t>(
      std::count(pending_.begin() + static_cast<std::ptrdiff_t>(std::min(done, lead)),
                 pending_.begin() + static_cast<std::ptrdiff_t>(done), '\n'));
  exported += whole;
  if (whole == pending_records_) {
    failing_ = false;
  } else {
    dropped += pending_records_ - whole;  // a full disk: counted, the proxy goes on
    if (!std::exchange(failing_, true))
      std::cerr << "netbox: export " << label << ": cannot write " << path_.string() << ": " << std::strerror(errno)
                << "\n";
  }
  pending_.clear();
  pending_records_ = 0;
}

void JsonlSink::reopen() {
  flush();
  const int old = fd_;
  fd_ = -1;
  open();
  if (fd_ < 0) {
    std::cerr << "netbox: export " << label << ": cannot reopen " << path_.string() << ": " << std::strerror(errno)
              << "; keeping the old file\n";
    fd_ = old;
    return;
  }
  if (old >= 0) ::close(old);
}

}  // namespace netbox::siem
