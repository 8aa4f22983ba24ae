#pragma once
// The pseudo-terminal an agent gets when the launcher has a terminal: the agent's
// session owns the slave, the launcher keeps the master, so nothing the agent does
// to its terminal (foreground group, TOSTOP, modes) reaches the launcher's own.
#include <sys/types.h>
#include <termios.h>

namespace netbox::launcher {

struct PseudoTerminal {
  int master = -1;  // O_NONBLOCK, close-on-exec
  int slave = -1;   // close-on-exec (the agent dup2s it onto 0, 1, 2)
};

// Opens a pty whose slave starts with the modes and window size of the terminal `like`.
// The slave stays root's (mode 0620, group tty): the agent uses the descriptors it is
// given and /dev/tty, and another agent of the same user cannot open it by name.
// Throws std::runtime_error.
PseudoTerminal open_pseudo_terminal(int like);

// Gives `to` (a master) the window size of the terminal `from`; the kernel then sends
// SIGWINCH to the slave's foreground group.
void copy_window_size(int from, int to) noexcept;

// Puts the terminal `fd` in raw mode, so every key reaches the agent's terminal
// (where ^C, ^Z and ^\ take effect), and restores it when destroyed or restore()d.
class RawMode {
 public:
  explicit RawMode(int fd);
  ~RawMode() { restore(); }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  void restore() noexcept;

 private:
  int fd_ = -1;
  termios saved_{};
};

}  // namespace netbox::launcher
