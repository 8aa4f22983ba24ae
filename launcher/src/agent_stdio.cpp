#include "netbox/launcher/agent_stdio.hpp"
#include "netbox/launcher/terminal_lock.hpp"

#include "netbox/launcher/agent_output_guard.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/pseudo_terminal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace netbox::launcher {
namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr int kHeldMs = 50;

// The launcher's stdout and stderr are one file (2>&1, one terminal): netbox's lines
// show up among the agent's stdout too.
bool same_file(int a, int b) {
  struct stat sa {}, sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Blocking write of everything, also to a descriptor someone else made non-blocking.
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      pollfd pf{fd, POLLOUT, 0};
      ::poll(&pf, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

struct AgentStdio::State {
  struct Output {
    int src = -1;  // our read end of the agent's pipe, or the pty master
    int dst = -1;  // the launcher's 1 or 2
    // Set where netbox's own lines may show up beside the agent's (agent_output_guard.hpp).
    std::optional<AgentOutputGuard> guard;
  };

  std::array<int, 3> agent{-1, -1, -1};
  int controlling = -1;
  PseudoTerminal pty;
  int terminal = -1;           // the launcher's terminal the pty copies its window size from
  bool raw_stdin = false;
  int in_dst = -1;             // where the launcher's stdin goes: our pipe end or the master
  bool in_is_pipe = false;
  std::vector<Output> outputs;
  int wake = -1;               // eventfd: the agent is gone, drain and stop
  int winch = -1;              // signalfd for SIGWINCH
  std::optional<RawMode> raw;
  std::thread thread;
  bool started = false;

  ~State() {
    for (int fd : agent)
      if (fd >= 0 && fd != pty.slave) ::close(fd);
    close_fd(pty.slave);
    for (auto& o : outputs)
      if (o.src != pty.master) close_fd(o.src);
    if (in_is_pipe) close_fd(in_dst);
    close_fd(pty.master);
    close_fd(wake);
    close_fd(winch);
  }

  // The master is both an output and the input's destination; when the launcher's side
  // of it breaks, it is closed, which hangs up the agent's terminal.
  void drop_master() {
    for (auto& o : outputs)
      if (o.src == pty.master) o.src = -1;
    if (in_dst == pty.master) in_dst = -1;
    close_fd(pty.master);
  }

  void drop_output(Output& o) {
    if (o.src == pty.master) drop_master();
    else close_fd(o.src);
  }

  // Copies one chunk; false once the stream has ended (or the launcher's side broke,
  // which closes our end so the agent gets EPIPE, as it would have writing directly).
  bool copy_once(Output& o, char* buf) {
    ssize_t n = ::read(o.src, buf, kChunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0 || !write_out(o, buf, static_cast<std::size_t>(n))) {
      if (o.guard) write_held(o);
      drop_output(o);
      return false;
    }
    return true;
  }

  // Both wait while an --ask question is open on the terminal (terminal_lock.hpp).
  static bool write_out(Output& o, const char* p, std::size_t n) {
    std::lock_guard terminal(terminal_lock());
    if (!o.guard) return write_all(o.dst, p, n);
    const std::string shown = o.guard->filter(std::string_view(p, n));
    return write_all(o.dst, shown.data(), shown.size());
  }

  static void write_held(Output& o) {
    std::lock_guard terminal(terminal_lock());
    const std::string held = o.guard->flush();
    write_all(o.dst, held.data(), held.size());
  }

  bool holding() const {
    for (const auto& o : outputs)
      if (o.guard && o.guard->holding()) return true;
    return false;
  }

  // The launcher's stdin on its way to the agent: what was read and not yet written.
  struct StdinRelay {
    std::string pending;
    std::size_t sent = 0;
    bool open = false;
  };

  std::vector<pollfd> poll_set(const StdinRelay& in) const {
    std::vector<pollfd> fds;
    fds.push_back({wake, POLLIN, 0});
    if (winch >= 0) fds.push_back({winch, POLLIN, 0});
    for (const auto& o : outputs)
      if (o.src >= 0) fds.push_back({o.src, POLLIN, 0});
    if (in.open && in_dst >= 0 && in.pending.empty()) fds.push_back({0, POLLIN, 0});
    if (in_dst >= 0 && !in.pending.empty()) fds.push_back({in_dst, POLLOUT, 0});
    return fds;
  }

  void resize_window() {
    signalfd_siginfo si{};
    while (::read(winch, &si, sizeof si) == sizeof si) {
    }
    if (pty.master >= 0) copy_window_size(terminal, pty.master);
  }

  void read_stdin(StdinRelay& in, std::vector<char>& buf) {
    ssize_t n = ::read(0, buf.data(), kChunk);
    if (n > 0) {
      in.pending.assign(buf.data(), static_cast<std::size_t>(n));
      in.sent = 0;
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      // EOF (or a terminal we may no longer read, in the background): the agent
      // sees EOF on its pipe.
      in.open = false;
      if (in_is_pipe) close_fd(in_dst);
    }
  }

  void write_stdin(StdinRelay& in) {
    ssize_t w = ::write(in_dst, in.pending.data() + in.sent, in.pending.size() - in.sent);
    if (w > 0) in.sent += static_cast<std::size_t>(w);
    if (w < 0 && errno != EINTR && errno != EAGAIN) {
      // The agent closed its stdin: nothing more goes there.
      in.pending.clear();
      in.open = false;
      if (in_is_pipe) close_fd(in_dst);
    } else if (in.sent == in.pending.size()) {
      in.pending.clear();
    }
  }

  // The agent and everything in its namespace are gone: what they wrote is buffered
  // in the pipes and the pty. Copy it, but do not wait for more (a descriptor passed
  // to a process outside could otherwise hold the launch open).
  void drain(std::vector<char>& buf) {
    for (auto& o : outputs) {
      if (o.src < 0) continue;
      set_nonblocking(o.src);
      while (o.src >= 0) {
        ssize_t n = ::read(o.src, buf.data(), kChunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || !write_out(o, buf.data(), static_cast<std::size_t>(n))) break;
      }
      if (o.guard) write_held(o);
    }
  }

  void relay() {
    std::vector<char> buf(kChunk);
    StdinRelay in;
    in.open = in_dst >= 0;
    for (;;) {
      std::vector<pollfd> fds = poll_set(in);
      // A line's start held back (it could become "netbox...") is shown, marked, once
      // the agent has been quiet a moment: a prompt is not held for ever.
      const int ready = ::poll(fds.data(), fds.size(), holding() ? kHeldMs : -1);
      if (ready == 0)
        for (auto& o : outputs)
          if (o.guard && o.guard->holding()) write_held(o);
      if (ready <= 0) continue;
      if (fds[0].revents) break;
      for (const auto& pf : fds) {
        if (!pf.revents) continue;
        if (pf.fd == winch) {
          resize_window();
        } else if (pf.fd == 0 && pf.events == POLLIN) {
          read_stdin(in, buf);
        } else if (pf.fd == in_dst && pf.events == POLLOUT) {
          write_stdin(in);
        } else {
          for (auto& o : outputs)
            if (o.src == pf.fd && o.src >= 0) copy_once(o, buf.data());
        }
      }
    }
    drain(buf);
  }
};

AgentStdio::AgentStdio(std::unique_ptr<State> state) : s_(std::move(state)) {}
AgentStdio::AgentStdio(AgentStdio&&) noexcept = default;
AgentStdio::~AgentStdio() { finish(); }

AgentStdio AgentStdio::open() {
  auto s = std::make_unique<State>();
  const bool tty[3] = {::isatty(0) == 1, ::isatty(1) == 1, ::isatty(2) == 1};
  auto fail = [](const char* what) {
    throw LaunchError(kExitLauncherFailure, std::string("setting up the agent's stdio: ") + what + ": " +
                                                std::strerror(errno));
  };
  if (tty[0] || tty[1] || tty[2]) {
    const int like = tty[0] ? 0 : tty[1] ? 1 : 2;
    try {
      s->pty = open_pseudo_terminal(like);
    } catch (const std::exception& e) {
      throw LaunchError(kExitLauncherFailure, e.what());
    }
    s->terminal = like;
    // Only a launch in the foreground of its terminal takes the keyboard: one started
    // in the background must leave the shell's terminal as it is.
    s->raw_stdin = tty[0] && ::tcgetpgrp(0) == ::getpgrp();
    s->controlling = like;
    // What the agent writes to its terminal goes to the launcher's terminal.
    s->outputs.push_back({s->pty.master, tty[1] ? 1 : tty[2] ? 2 : 1, AgentOutputGuard{}});
    sigset_t winch;
    sigemptyset(&winch);
    sigaddset(&winch, SIGWINCH);
    s->winch = ::signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s->winch < 0) fail("signalfd");
  }
  if (tty[0]) {
    s->agent[0] = s->pty.slave;
    s->in_dst = s->pty.master;
  } else {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) fail("pipe");
    s->agent[0] = p[0];
    s->in_dst = p[1];
    s->in_is_pipe = true;
    set_nonblocking(p[1]);  // our end only: a pipe's two ends are separate open files
  }
  for (int fd : {1, 2}) {
    if (tty[fd]) {
      s->agent[static_cast<std::size_t>(fd)] = s->pty.slave;
      continue;
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) fail("pipe");
    s->agent[static_cast<std::size_t>(fd)] = p[1];
    std::optional<AgentOutputGuard> guard;
    if (fd == 2 || same_file(1, 2)) guard.emplace();
    s->outputs.push_back({p[0], fd, guard});
  }
  s->wake = ::eventfd(0, EFD_CLOEXEC);
  if (s->wake < 0) fail("eventfd");
  return AgentStdio(std::move(s));
}

const std::array<int, 3>& AgentStdio::agent_fds() const { return s_->agent; }
int AgentStdio::controlling_terminal() const { return s_->controlling; }

void AgentStdio::start() {
  State& s = *s_;
  for (auto& fd : s.agent)
    if (fd != s.pty.slave) close_fd(fd);
  close_fd(s.pty.slave);
  s.agent = {-1, -1, -1};
  if (s.raw_stdin) s.raw.emplace(0);
  s.thread = std::thread([&s] { s.relay(); });
  s.started = true;
}

void AgentStdio::finish() noexcept {
  if (!s_) return;
  State& s = *s_;
  if (s.started) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(s.wake, &one, sizeof one);
    s.thread.join();
    s.started = false;
  }
  if (s.raw) s.raw->restore();
  s_.reset();
}

}  // namespace netbox::launcher
