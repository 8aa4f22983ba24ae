#pragma once
// One line per event on stderr, as `key=value` text or as a JSON object whose first keys
// are ts, level and event; numbers stay numbers, and a request's fields are named like
// the audit store's `requests` columns.
//
// Lines are rendered on the caller's thread and written by the logger's own thread, so
// an io thread never blocks in write(2) on a slow stderr (a full pipe to journald, a
// paused terminal). Lines keep the order they were written in and all are written out
// before the Logger is gone. The thread lets lines gather for up to kGather (or until
// kGatherBytes are waiting) before each write(2): under load one wake-up and one write
// carry hundreds of lines instead of one each, which on a busy machine is a context
// switch per request saved. Only if stderr stays stuck until kMostPending bytes are
// waiting does a caller wait for room: memory stays bounded and no line is dropped.
#include "base/log_keys.hpp"
#include "netbox/proxy/log_field.hpp"
#include "netbox/proxy/proxy_options.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace netbox::proxy {

class Logger {
 public:
  static constexpr std::size_t kMostPending = 4 << 20;
  static constexpr std::chrono::milliseconds kGather{10};
  static constexpr std::size_t kGatherBytes = 64 << 10;

  // Lines go to `fd` (stderr unless the options name another; the caller keeps it open).
  Logger(LogFormat format, int fd);
  ~Logger();  // writes every line queued so far, then stops the thread
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // `event` names what happened ("request", "listening", "policy_reload_failed" ...); the
  // first form takes the level the event has in level_of().
  void write(std::string_view event, LogFields fields);
  void write(LogLevel level, std::string_view event, LogFields fields);
  void write(LogLevel level, std::string_view event, std::span<const LogField> fields);

 private:
  void run();
  void render_into(std::string& line, LogLevel level, std::string_view event, std::span<const LogField> fields) const;

  LogFormat format_;
  int fd_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // the thread waits for lines
  std::condition_variable room_cv_;  // callers wait while kMostPending bytes are queued
  std::string pending_;              // whole lines, oldest first
  bool stopping_ = false;
  std::thread thread_;  // last: starts after every member above exists
};

// Lines an agent can cause by the thousand a second (exfiltration attempts): per agent and
// minute, the first line of each key, and at most kLinesPerAgent lines in all. The lines held
// back are counted, and the agent's next line written says how many ("held_back"); the
// audit store's counted rows have every one.
class AgentLogLimit {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::minutes kWindow{1};
  static constexpr std::size_t kLinesPerAgent = 16;

  // nullopt: hold this line back. Else write it, with the number of this agent's lines held
  // back since its previous line.
  std::optional<std::uint64_t> admit(const std::string& agent, const std::string& key, Clock::time_point now);

 private:
  struct Window {
    Clock::time_point start{};
    std::size_t lines = 0;
    std::uint64_t held_back = 0;
    std::unordered_set<std::string> keys;  // at most kLinesPerAgent
  };
  std::mutex mu_;
  std::unordered_map<std::string, Window> agents_;  // one per agent name: registered agents, and anonymous
};

}  // namespace netbox::proxy
