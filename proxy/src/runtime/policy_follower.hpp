#pragma once
// How a Server follows its policy file, on a thread of its own so a reload (reading and
// checking the file) never holds up an io thread:
// - watched with inotify on the file's folder, not on the file: an editor that writes a
//   new file and renames it over the old one replaces the inode a file watch would hold.
//   Every event naming the file (any entry coming or going, when the file is a symlink)
//   (re)starts a short quiet period; once it is over, `changed` runs. The caller compares the file's FileStamp with the one it last loaded, so a burst
//   of events is one reload, a file still being written is read once it is quiet, and a
//   reload already made (reload_policy(), SIGHUP) is not repeated.
// - a database source (`--policy postgresql://...`, policy_source.hpp) is followed with
//   LISTEN instead (audit::PolicyWatch, on a thread of its own): `changed` runs after each
//   notification, and the caller compares file_stamp (the latest version and its text's
//   hash) with what it loaded, as for a file.
// - reloaded on SIGHUP, when asked: the signal is the process's, so only a process running
//   one Server asks (`netbox proxy`; a launcher forwards SIGHUP to its agent).
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/stat.h>

#include "netbox/audit/policy_store.hpp"

#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace netbox::proxy {

// Which file a path names now: a change of any of these is a change of the file.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  timespec ctime{};
  bool operator==(const FileStamp& o) const;
};
// Follows symlinks. For a database source: the latest version (ino) and its text's hash (dev).
std::optional<FileStamp> file_stamp(const std::filesystem::path& path);

class PolicyFollower {
 public:
  struct Hooks {
    // The folder was quiet after events, or the database notified. False: the source could
    // not be read (a database only); the database's watch asks again a second later.
    std::function<bool()> changed;
    std::function<void()> hangup;   // SIGHUP
    std::function<void(std::string)> cannot_watch;  // why; SIGHUP still works
  };
  static constexpr std::chrono::milliseconds kQuiet{200};

  PolicyFollower(std::filesystem::path file, bool watch, bool sighup, Hooks hooks);
  ~PolicyFollower();  // stops and joins the thread
  PolicyFollower(const PolicyFollower&) = delete;
  PolicyFollower& operator=(const PolicyFollower&) = delete;

 private:
  void watch_folder();
  void read_events();
  void on_events(boost::system::error_code ec, std::size_t n);
  void wait_hangup();

  std::filesystem::path file_;
  Hooks hooks_;
  boost::asio::io_context ioc_{1};
  boost::asio::posix::stream_descriptor inotify_{ioc_};
  boost::asio::steady_timer quiet_{ioc_};
  std::optional<boost::asio::signal_set> hangup_;
  alignas(8) std::array<char, 4096> events_{};
  std::thread thread_;
  std::unique_ptr<audit::PolicyWatch> database_;  // a database source's LISTEN
};

}  // namespace netbox::proxy
