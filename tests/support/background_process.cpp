#include "support/background_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <set>
#include <mutex>
#include <thread>

namespace netbox::test {

BackgroundProcess::BackgroundProcess(std::vector<std::string> argv, std::filesystem::path log_file,
                                     std::map<std::string, std::string> extra_env)
    : log_(std::move(log_file)) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int devnull = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (devnull >= 0) dup2(devnull, 0);
    ::close_range(3, ~0U, 0);  // nothing else of the test's process (its sockets) goes with the child
    setpgid(0, 0);
    for (auto& [k, v] : extra_env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && status_ < 0) stop(SIGTERM, std::chrono::seconds(5));
}

bool BackgroundProcess::running() {
  if (pid_ <= 0 || status_ >= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

int BackgroundProcess::stop(int sig, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  if (status_ >= 0) return status_;
  kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return -1;
}

std::string BackgroundProcess::log() const {
  std::ifstream f(log_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {

unsigned short any_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

// Each port once per test process: the kernel may hand the port just closed to the next
// bind to 0, so two calls in a row (a proxy's port, then its admin port) could name the
// same one, and the proxy then fails to start ("Address already in use").
unsigned short free_port() {
  static std::mutex mu;
  static std::set<unsigned short> given;
  std::lock_guard lock(mu);
  for (int tries = 0; tries < 64; ++tries) {
    const auto port = any_free_port();
    if (given.insert(port).second) return port;
  }
  throw std::runtime_error("cannot find a free port on 127.0.0.1 not handed out before");
}

bool wait_for_port(unsigned short port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    // A port from the ephemeral range nobody listens on yet can "connect" to itself (TCP
    // simultaneous open, when the kernel picks that very port as the source): not ready.
    sockaddr_in self{};
    socklen_t len = sizeof self;
    if (ok && getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0 && self.sin_port == a.sin_port)
      ok = false;
    close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace netbox::test
