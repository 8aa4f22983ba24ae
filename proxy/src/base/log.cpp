#include "base/log.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/audit/query.hpp"

#include <nlohmann/json.hpp>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <utility>

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

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
    case LogLevel::info: break;
  }
  return "info";
}

// The level of an event logged without one: what it says about the proxy itself.
LogLevel level_of(std::string_view event) {
  using namespace log_event;
  if (event == audit_error || event == audit_refused || event == accept_error) return LogLevel::error;
  if (event == policy_reload_failed || event == endpoint_registry_unavailable || event == connection_refused ||
      event == foreign_source_refused || event == header_timeout || event == exfiltration_attempt)
    return LogLevel::warn;
  return LogLevel::info;
}

}  // namespace

void Logger::render_into(std::string& line, LogLevel level, std::string_view event, std::span<const LogField> fields) const {
  const audit::TimestampText stamp(audit::Clock::now());  // a fixed buffer: a line per request
  const std::string_view ts = stamp.view();
  if (format_ == LogFormat::json) {
    nlohmann::ordered_json j;  // ts, level and event first, for a reader's eye
    j[std::string(log_key::ts)] = std::string(ts);
    j[std::string(log_key::level)] = to_string(level);
    j[std::string(log_key::event)] = event;
    for (const auto& f : fields) {
      auto& v = j[std::string(f.key)];
      if (f.kind == LogField::Kind::number) v = f.number;
      else if (f.kind == LogField::Kind::text) v = f.text;
      // null stays null
    }
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
    if (f.kind == LogField::Kind::null || (f.kind == LogField::Kind::text && f.text.empty())) continue;
    line += ' ';
    line += f.key;
    line += '=';
    if (f.kind == LogField::Kind::number) {
      char digits[24];
      line.append(digits, static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, f.number).ptr - digits));
      continue;
    }
    // Values may be agent-chosen (paths, hosts): never a byte that drives the reader's terminal.
    std::string escaped;
    std::string_view value = f.text;
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

void Logger::write(std::string_view event, LogFields fields) { write(level_of(event), event, fields); }

void Logger::write(LogLevel level, std::string_view event, LogFields fields) {
  write(level, event, std::span<const LogField>(fields.begin(), fields.size()));
}

void Logger::write(LogLevel level, std::string_view event, std::span<const LogField> fields) {
  // Rendered outside the lock into this thread's own buffer, which keeps its capacity.
  thread_local std::string line;
  line.clear();
  render_into(line, level, event, fields);
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

std::optional<std::uint64_t> AgentLogLimit::admit(const std::string& agent, const std::string& key,
                                                  Clock::time_point now) {
  std::lock_guard lock(mu_);
  Window& w = agents_[agent];
  if (now - w.start >= kWindow) {
    w.start = now;
    w.lines = 0;
    w.keys.clear();
  }
  if (w.lines >= kLinesPerAgent || !w.keys.insert(key).second) {
    ++w.held_back;
    return std::nullopt;
  }
  ++w.lines;
  return std::exchange(w.held_back, 0);
}

}  // namespace netbox::proxy
