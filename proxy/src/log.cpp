#include "log.hpp"

#include "netbox/audit/query.hpp"

#include <nlohmann/json.hpp>
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

std::string quote(std::string_view v) {
  std::string out = "\"";
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
  return out + '"';
}

}  // namespace

std::string Logger::render(std::string_view event, const LogFields& fields) const {
  const auto ts = audit::format_timestamp(audit::Clock::now());
  if (format_ == LogFormat::json) {
    nlohmann::json j;
    j["ts"] = ts;
    j["event"] = event;
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line;
  line.reserve(256);
  line += ts;
  line += ' ';
  line += event;
  for (const auto& [k, v] : fields) {
    if (v.empty()) continue;
    line += ' ';
    line += k;
    line += '=';
    line += needs_quotes(v) ? quote(v) : v;
  }
  return line + "\n";
}

Logger::Logger(LogFormat format) : format_(format), thread_([this] { run(); }) {}

Logger::~Logger() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

void Logger::write(std::string_view event, const LogFields& fields) {
  const auto line = render(event, fields);
  bool wake = false;
  {
    std::unique_lock lk(mu_);
    room_cv_.wait(lk, [this] { return pending_.size() < kMostPending; });
    wake = pending_.empty();  // otherwise the thread is already on its way
    pending_ += line;
  }
  if (wake) work_cv_.notify_one();
}

void Logger::run() {
  std::string writing;
  std::unique_lock lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything is out
    writing.swap(pending_);        // the emptied buffer keeps its capacity for the next lines
    lk.unlock();
    room_cv_.notify_all();
    std::string_view rest = writing;
    while (!rest.empty()) {
      const auto n = ::write(STDERR_FILENO, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr closed or broken: nowhere left to write to
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    writing.clear();
    lk.lock();
  }
}

}  // namespace netbox::proxy
