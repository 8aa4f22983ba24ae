#include "runtime/policy_follower.hpp"

#include "runtime/policy_source.hpp"

#include <boost/asio/post.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>

#include <cerrno>
#include <cstring>

namespace netbox::proxy {

namespace asio = boost::asio;

bool FileStamp::operator==(const FileStamp& o) const {
  return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
         mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
}

std::optional<FileStamp> file_stamp(const std::filesystem::path& path) {
  if (is_database_source(path)) {
    const auto published = published_stamp(path);
    if (!published) return std::nullopt;
    return FileStamp{static_cast<dev_t>(published->body_hash), static_cast<ino_t>(published->version), 0, {}, {}};
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

PolicyFollower::PolicyFollower(std::filesystem::path file, bool watch, bool sighup, Hooks hooks)
    : file_(std::move(file)), hooks_(std::move(hooks)) {
  if (watch && is_database_source(file_))
    // The hooks run on the watch's thread: reload_if_changed and the log take their locks.
    database_ = std::make_unique<audit::PolicyWatch>(
        file_.native(), [this] { return hooks_.changed(); }, [this](std::string why) { hooks_.cannot_watch(std::move(why)); });
  else if (watch)
    watch_folder();
  if (sighup) {
    hangup_.emplace(ioc_, SIGHUP);
    wait_hangup();
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "netbox-policy");
    ioc_.run();
  });
}

PolicyFollower::~PolicyFollower() {
  database_.reset();  // joins its thread before the hooks go
  asio::post(ioc_, [this] {
    boost::system::error_code ec;
    quiet_.cancel();
    inotify_.close(ec);
    if (hangup_) hangup_->cancel(ec);
  });
  if (thread_.joinable()) thread_.join();  // run() returns once nothing is pending
}

void PolicyFollower::watch_folder() {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return hooks_.cannot_watch(std::string("inotify_init1: ") + std::strerror(errno));
  const auto folder = file_.parent_path().empty() ? std::filesystem::path(".") : file_.parent_path();
  // IN_MODIFY only restarts the quiet period: a file being written is read once it is done.
  const auto mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MODIFY |
                    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
  if (::inotify_add_watch(fd, folder.c_str(), mask) < 0) {
    const std::string why = "watching " + folder.string() + ": " + std::strerror(errno);
    ::close(fd);
    return hooks_.cannot_watch(why);
  }
  inotify_.assign(fd);
  read_events();
}

void PolicyFollower::read_events() {
  inotify_.async_read_some(asio::buffer(events_), [this](boost::system::error_code ec, std::size_t n) {
    on_events(ec, n);
  });
}

void PolicyFollower::on_events(boost::system::error_code ec, std::size_t n) {
  if (ec) return;  // closed by the destructor
  // Only events naming the file count: the folder may hold busy files (an audit store
  // beside the policy), whose writes would otherwise hold the quiet period open for good.
  // A symlink's target can be swapped by renaming another entry (Kubernetes' ..data),
  // so for a symlink every entry coming or going counts.
  const auto name = file_.filename().string();
  std::error_code link_ec;
  const bool link = std::filesystem::is_symlink(file_, link_ec);
  bool relevant = false, gone = false;
  for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
    inotify_event ev;
    std::memcpy(&ev, events_.data() + off, sizeof ev);
    const char* ev_name = events_.data() + off + sizeof(inotify_event);
    const bool named = ev.len > 0 && name == std::string_view(ev_name, ::strnlen(ev_name, ev.len));
    gone = gone || (ev.mask & IN_IGNORED) != 0;
    relevant = relevant || named || (ev.mask & (IN_Q_OVERFLOW | IN_IGNORED)) != 0 ||
               (link && (ev.mask & (IN_MOVED_TO | IN_CREATE | IN_DELETE)) != 0);
    off += sizeof(inotify_event) + ev.len;
  }
  if (relevant) {
    quiet_.expires_after(kQuiet);
    quiet_.async_wait([this](boost::system::error_code e) {
      if (!e) (void)hooks_.changed();  // a file that cannot be read is reported; its next change is read
    });
  }
  if (gone) return hooks_.cannot_watch(file_.parent_path().string() + " was removed or moved away");
  read_events();
}

void PolicyFollower::wait_hangup() {
  hangup_->async_wait([this](boost::system::error_code ec, int) {
    if (ec) return;
    hooks_.hangup();
    wait_hangup();
  });
}

}  // namespace netbox::proxy
