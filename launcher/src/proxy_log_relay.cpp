#include "netbox/launcher/proxy_log_relay.hpp"

#include "netbox/audit/printable.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

namespace netbox::launcher {
namespace {

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const auto n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk or a closed terminal loses log lines, never the launch
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string text_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// "netbox: refused GET denied.test:8080/path: why (deny 403)", with every byte the agent
// chose (host, path) made harmless for the terminal.
std::string refusal_line(const nlohmann::json& j, const std::string& verb) {
  std::string what = text_of(j, "method");
  what += (what.empty() ? "" : " ") + text_of(j, "host") + ":" + text_of(j, "port") + text_of(j, "path");
  std::string why = text_of(j, "reason");
  if (const auto error = text_of(j, "error"); !error.empty()) why += (why.empty() ? "" : "; ") + error;
  std::string line = "netbox: " + verb + " " + what + (why.empty() ? "" : ": " + why) + " (" + text_of(j, "decision");
  if (const auto status = text_of(j, "status"); !status.empty()) line += " " + status;
  return audit::escape_controls(line + ")") + "\n";
}

}  // namespace

ProxyLogRelay::ProxyLogRelay(int log_file, bool quiet) : log_file_(log_file), quiet_(quiet) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe for the proxy's log");
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  // The thread starts with every signal blocked (it inherits this mask): the launcher's
  // signals are the supervisor's to take, never this thread's.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

ProxyLogRelay::~ProxyLogRelay() { finish(); }

void ProxyLogRelay::finish() {
  if (write_fd_ >= 0) ::close(write_fd_);
  write_fd_ = -1;
  if (thread_.joinable()) thread_.join();
  if (read_fd_ >= 0) ::close(read_fd_);
  read_fd_ = -1;
}

void ProxyLogRelay::run() {
  std::string pending;
  char buf[16384];
  for (;;) {
    const auto n = ::read(read_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n', start)) {
      line(pending.substr(start, end + 1 - start));
      start = end + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) line(pending + "\n");
}

void ProxyLogRelay::line(const std::string& text) {
  if (log_file_ >= 0) write_all(log_file_, text);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  const std::string event = text_of(j, "event"), level = text_of(j, "level");
  if (event == "request") {
    // The proxy's own judgement (its level): a refusal, an upstream error, a 4xx/5xx.
    if (level != "warn") {
      ++allowed_;
      return;
    }
    // Report mode: let through, and the person learns what enforcing would refuse.
    const bool reported = text_of(j, "decision") == "report";
    ++(reported ? reported_ : refused_);
    if (!quiet_) write_all(2, refusal_line(j, reported ? "reported (enforce would refuse)" : "refused"));
  } else if ((level == "warn" || level == "error") && !quiet_) {
    // A refused connection, an exfiltration attempt, the proxy failing (its audit store):
    // the person's business too, not only the file's.
    std::string out = "netbox: " + event;
    for (const auto& [key, value] : j.items())
      if (key != "ts" && key != "level" && key != "event" && !value.is_null())
        out += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    write_all(2, audit::escape_controls(out) + "\n");
  }
}

}  // namespace netbox::launcher
