#pragma once
// The one protocol between the launcher and its confined child (confined_child.hpp): four
// pipes, made before the clone, each end kept by one side. Every message, in order:
//
//   go      launcher -> init   the proxy's ports (once the proxy has its sockets), then
//                              release: the launcher's setup is done, the agent may run
//   status  init -> launcher   ready (the agent is forked), or failed with why; then EOF
//   exec    agent -> launcher  CLOEXEC: EOF when the exec succeeded, else one ExecFailure
//   report  init -> launcher   after the agent: the bytes the --workdir-quota overlay took,
//                              in decimal; EOF alone: none counted
//
// The child side's calls allocate nothing once the agent's limits are set (exec_failed is
// async-signal-safe). A side whose peer is gone reads nothing or fails to write: the
// launcher reports it (LaunchError 125), the child exits.
#include "netbox/launcher/proxy_ports.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace netbox::launcher {

// Why the agent could not exec: the step and its errno.
struct ExecFailure {
  int err = 0;
  char step[96] = {};
};

// What the init answers on status: ready, or the first setup step that failed.
struct SetupReply {
  bool ready = false;
  std::string error;  // empty with ready, or when the init died without saying
};

class ChildPipes {
 public:
  // Throws LaunchError(125) when the pipes cannot be made.
  static ChildPipes open();
  ChildPipes(ChildPipes&& other) noexcept;
  ChildPipes& operator=(ChildPipes&& other) noexcept;
  ChildPipes(const ChildPipes&) = delete;
  ChildPipes& operator=(const ChildPipes&) = delete;
  ~ChildPipes();

  // After the clone: each side closes the other's ends.
  void keep_launcher_ends();
  void keep_child_ends();

  // The launcher's side. The writes return false when the child is gone.
  bool send_ports(const ProxyPorts& ports);
  bool send_release();
  SetupReply read_setup_reply();
  // nullopt: the agent exec'd. A failure with an empty step: it died before it could say.
  std::optional<ExecFailure> read_exec_failure();
  std::optional<std::uint64_t> read_workdir_bytes();

  // The init's side. nullopt / false: the launcher gave up (or died).
  std::optional<ProxyPorts> read_ports();
  bool read_release();
  void reply_ready();
  void reply_failed(const std::string& why);
  void close_status();
  void close_exec();
  void report_workdir_bytes(std::uint64_t bytes);
  int exec_fd() const { return exec_[1]; }
  int report_fd() const { return report_[1]; }

  // The agent's side, between fork and exec.
  static void exec_failed(int exec_fd, int err, const char* step) noexcept;

 private:
  ChildPipes() = default;
  // [0] the read end, [1] the write end; -1 once closed.
  int go_[2] = {-1, -1};
  int status_[2] = {-1, -1};
  int exec_[2] = {-1, -1};
  int report_[2] = {-1, -1};
};

}  // namespace netbox::launcher
