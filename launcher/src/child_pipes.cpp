#include "netbox/launcher/child_pipes.hpp"

#include "netbox/launcher/launch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace netbox::launcher {
namespace {

// launcher -> init on go, after the ports: the agent may run.
constexpr char kRelease = 'G';
// init -> launcher on status: the agent is forked; or 'E' and why setup failed.
constexpr char kReady = 'R';
constexpr char kFailed = 'E';

bool write_all(int fd, const void* data, std::size_t size) noexcept {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until EOF or `size` bytes; returns how many were read.
std::size_t read_full(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, p + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

std::string read_to_eof(int fd) {
  std::string out;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildPipes ChildPipes::open() {
  ChildPipes p;
  for (int* fds : {p.go_, p.status_, p.exec_, p.report_})
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw LaunchError(kExitLauncherFailure, std::string("pipe: ") + std::strerror(errno));
  return p;
}

ChildPipes::ChildPipes(ChildPipes&& o) noexcept { *this = std::move(o); }

ChildPipes& ChildPipes::operator=(ChildPipes&& o) noexcept {
  if (this == &o) return *this;
  for (int i = 0; i < 2; ++i) {
    close_fd(go_[i]);
    close_fd(status_[i]);
    close_fd(exec_[i]);
    close_fd(report_[i]);
    go_[i] = std::exchange(o.go_[i], -1);
    status_[i] = std::exchange(o.status_[i], -1);
    exec_[i] = std::exchange(o.exec_[i], -1);
    report_[i] = std::exchange(o.report_[i], -1);
  }
  return *this;
}

ChildPipes::~ChildPipes() {
  for (int i = 0; i < 2; ++i) {
    close_fd(go_[i]);
    close_fd(status_[i]);
    close_fd(exec_[i]);
    close_fd(report_[i]);
  }
}

void ChildPipes::keep_launcher_ends() {
  close_fd(go_[0]);
  close_fd(status_[1]);
  close_fd(exec_[1]);
  close_fd(report_[1]);
}

void ChildPipes::keep_child_ends() {
  close_fd(go_[1]);
  close_fd(status_[0]);
  close_fd(exec_[0]);
  close_fd(report_[0]);
}

// A plain struct of ports between two halves of one binary: sent as its bytes.
bool ChildPipes::send_ports(const ProxyPorts& ports) { return write_all(go_[1], &ports, sizeof ports); }

bool ChildPipes::send_release() {
  const bool sent = write_all(go_[1], &kRelease, 1);
  close_fd(go_[1]);
  return sent;
}

SetupReply ChildPipes::read_setup_reply() {
  std::string reply = read_to_eof(status_[0]);
  close_fd(status_[0]);
  if (reply.size() == 1 && reply[0] == kReady) return {true, {}};
  if (!reply.empty() && reply[0] == kFailed) return {false, reply.substr(1)};
  return {};
}

std::optional<ExecFailure> ChildPipes::read_exec_failure() {
  ExecFailure f;
  const std::size_t n = read_full(exec_[0], &f, sizeof f);
  close_fd(exec_[0]);
  if (n == 0) return std::nullopt;
  if (n != sizeof f) return ExecFailure{};
  f.step[sizeof f.step - 1] = '\0';
  return f;
}

std::optional<std::uint64_t> ChildPipes::read_workdir_bytes() {
  std::string text = read_to_eof(report_[0]);
  close_fd(report_[0]);
  if (text.empty()) return std::nullopt;
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

std::optional<ProxyPorts> ChildPipes::read_ports() {
  ProxyPorts ports;
  if (read_full(go_[0], &ports, sizeof ports) != sizeof ports) return std::nullopt;
  return ports;
}

bool ChildPipes::read_release() {
  char go = 0;
  const bool released = read_full(go_[0], &go, 1) == 1 && go == kRelease;
  close_fd(go_[0]);
  return released;
}

void ChildPipes::reply_ready() {
  write_all(status_[1], &kReady, 1);
  close_fd(status_[1]);
}

void ChildPipes::reply_failed(const std::string& why) {
  const std::string msg = kFailed + why;
  write_all(status_[1], msg.data(), msg.size());
  close_fd(status_[1]);
}

void ChildPipes::close_status() { close_fd(status_[1]); }
void ChildPipes::close_exec() { close_fd(exec_[1]); }

void ChildPipes::report_workdir_bytes(std::uint64_t bytes) {
  const std::string text = std::to_string(bytes);
  write_all(report_[1], text.data(), text.size());
}

void ChildPipes::exec_failed(int exec_fd, int err, const char* step) noexcept {
  ExecFailure f;
  f.err = err;
  std::strncpy(f.step, step, sizeof f.step - 1);
  write_all(exec_fd, &f, sizeof f);
}

}  // namespace netbox::launcher
