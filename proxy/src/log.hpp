#pragma once
// One line per event on stderr, as `key=value` text or as a JSON object.
//
// Lines are rendered on the caller's thread and written by the logger's own thread, so
// an io thread never blocks in write(2) on a slow stderr (a full pipe to journald, a
// paused terminal). Lines keep the order they were written in, are written as soon as
// the thread wakes (under load, many per write(2)), and all are written out before the
// Logger is gone. Only if stderr stays stuck until kMostPending bytes are waiting does a
// caller wait for room: memory stays bounded and no line is dropped.
#include "netbox/proxy/server.hpp"

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace netbox::proxy {

using LogFields = std::vector<std::pair<std::string_view, std::string>>;

class Logger {
 public:
  static constexpr std::size_t kMostPending = 4 << 20;

  explicit Logger(LogFormat format);
  ~Logger();  // writes every line queued so far, then stops the thread
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // `event` names what happened ("request", "listening", "policy_reload_failed" ...).
  void write(std::string_view event, const LogFields& fields);
  std::string render(std::string_view event, const LogFields& fields) const;

 private:
  void run();

  LogFormat format_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // the thread waits for lines
  std::condition_variable room_cv_;  // callers wait while kMostPending bytes are queued
  std::string pending_;              // whole lines, oldest first
  bool stopping_ = false;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace netbox::proxy
