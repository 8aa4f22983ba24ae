#include "log.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/audit/query.hpp"

#include <nlohmann/json.hpp>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>

namespace netbox::proxy {
namespace {

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) return true;
  return false;
}

void append_quoted(std::string& out, std::string_view v) {
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';  // one event, one line: control characters never break it
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

void Logger::render_into(std::string& line, std::string_view event, LogFields fields) const {
  const auto ts = audit::format_timestamp(audit::Clock::now());
  if (format_ == LogFormat::json) {
    nlohmann::json j;
    j["ts"] = ts;
    j["event"] = event;
    for (const auto& f : fields) j[std::string(f.key)] = f.value;
    // A terminal acts on DEL, C1 and bidi controls, which the serializer leaves raw.
    std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += audit::needs_escaping(text) ? audit::escape_controls_in_json(text) : text;
    line += '\n';
    return;
  }
  line += ts;
  line += ' ';
  line += event;
  for (const auto& f : fields) {
    if (f.value.empty()) continue;
    line += ' ';
    line += f.key;
    line += '=';
    // Values may be agent-chosen (paths, hosts): never a byte that drives the reader's terminal.
    std::string escaped;
    std::string_view value = f.value;
    if (audit::needs_escaping(value)) value = escaped = audit::escape_controls(value);
    if (needs_quotes(value)) append_quoted(line, value);
    else line += value;
  }
  line += '\n';
}

Logger::Logger(LogFormat format, int fd) : format_(format), fd_(fd), thread_([this] { run(); }) {}

Logger::~Logger() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

void Logger::write(std::string_view event, LogFields fields) {
  // Rendered outside the lock into this thread's own buffer, which keeps its capacity.
  thread_local std::string line;
  line.clear();
  render_into(line, event, fields);
  bool wake = false;
  {
    std::unique_lock lk(mu_);
    room_cv_.wait(lk, [this] { return pending_.size() < kMostPending; });
    // The thread sleeps untimed only while nothing is pending; while lines gather it
    // wakes by itself, or when a full write's worth has come together.
    wake = pending_.empty() || (pending_.size() < kGatherBytes && pending_.size() + line.size() >= kGatherBytes);
    pending_ += line;
  }
  if (wake) work_cv_.notify_one();
}

void Logger::run() {
  pthread_setname_np(pthread_self(), "netbox-log");  // shows in top -H, perf and gdb
  std::string writing;
  std::unique_lock lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything is out
    work_cv_.wait_for(lk, kGather, [this] { return stopping_ || pending_.size() >= kGatherBytes; });
    writing.swap(pending_);        // the emptied buffer keeps its capacity for the next lines
    lk.unlock();
    room_cv_.notify_all();
    std::string_view rest = writing;
    while (!rest.empty()) {
      const auto n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // closed or broken: nowhere left to write to
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    writing.clear();
    lk.lock();
  }
}

}  // namespace netbox::proxy
