#pragma once
// The agent's stdin, stdout and stderr. The agent never holds one of the launcher's
// own descriptors (through /proc/self/fd it could read a log file's earlier content,
// truncate it, or write into a socket given as stdin): where the launcher has a
// terminal the agent gets the slave of a pseudo-terminal the launcher owns, elsewhere
// a pipe, and a thread of the launcher copies between them. The embedded proxy's log
// lines therefore go to a stderr the agent cannot touch.
#include <array>
#include <memory>

namespace netbox::launcher {

class AgentStdio {
 public:
  // Call before the child is cloned (the clone inherits the agent's ends). Throws
  // LaunchError(125).
  static AgentStdio open();
  AgentStdio(AgentStdio&&) noexcept;
  AgentStdio& operator=(AgentStdio&&) = delete;
  ~AgentStdio();  // finish()

  // What the agent gets as 0, 1 and 2 (descriptors of this process).
  const std::array<int, 3>& agent_fds() const;
  // Which of 0, 1, 2 is the pty slave the agent makes its controlling terminal; -1: none.
  int controlling_terminal() const;

  // After the clone: closes the agent's ends here, puts the launcher's terminal in raw
  // mode (when stdin is one) and starts copying on a thread.
  void start();
  // Once the agent's init is reaped: copies whatever the agent wrote that is still
  // buffered, stops, and restores the terminal. Never throws; idempotent.
  void finish() noexcept;

 private:
  struct State;
  explicit AgentStdio(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace netbox::launcher
