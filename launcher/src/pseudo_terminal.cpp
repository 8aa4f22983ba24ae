#include "netbox/launcher/pseudo_terminal.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netbox::launcher {
namespace {

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("pseudo-terminal: ") + what + ": " + std::strerror(errno));
}

}  // namespace

PseudoTerminal open_pseudo_terminal(int like) {
  PseudoTerminal pty;
  pty.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty.master < 0) fail("posix_openpt");
  auto close_all = [&] {
    if (pty.slave >= 0) ::close(pty.slave);
    ::close(pty.master);
  };
  if (::unlockpt(pty.master) != 0) {
    close_all();
    fail("unlockpt");
  }
  // By the master rather than by name: no window for another /dev/pts/N to be opened.
  pty.slave = ::ioctl(pty.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty.slave < 0) {
    close_all();
    fail("TIOCGPTPEER");
  }
  termios modes {};
  if (::tcgetattr(like, &modes) == 0) ::tcsetattr(pty.slave, TCSANOW, &modes);
  copy_window_size(like, pty.master);
  int flags = ::fcntl(pty.master, F_GETFL);
  if (flags < 0 || ::fcntl(pty.master, F_SETFL, flags | O_NONBLOCK) != 0) {
    close_all();
    fail("O_NONBLOCK");
  }
  return pty;
}

void copy_window_size(int from, int to) noexcept {
  winsize ws {};
  if (::ioctl(from, TIOCGWINSZ, &ws) == 0) ::ioctl(to, TIOCSWINSZ, &ws);
}

RawMode::RawMode(int fd) {
  if (::tcgetattr(fd, &saved_) != 0) return;
  termios raw = saved_;
  ::cfmakeraw(&raw);
  if (::tcsetattr(fd, TCSADRAIN, &raw) == 0) fd_ = fd;
}

void RawMode::restore() noexcept {
  if (fd_ < 0) return;
  ::tcsetattr(fd_, TCSADRAIN, &saved_);
  fd_ = -1;
}

}  // namespace netbox::launcher
