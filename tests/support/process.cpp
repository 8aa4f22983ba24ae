#include "support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

extern char** environ;

namespace netbox::test {

std::filesystem::path netbox_binary() { return NETBOX_BINARY; }
std::filesystem::path source_dir() { return NETBOX_SOURCE_DIR; }

RunResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
              const std::string& input) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  // Nothing else of this process goes with the child: an in-process proxy's or upstream's
  // sockets (asio opens them without CLOEXEC) would stay open for the child's life, and a
  // peer waiting for their close (a TLS upstream's close_notify) would hang with it.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  RunResult r;
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(in_pipe[1]);
    r.exit_code = 127;
    r.err = "cannot spawn " + argv[0];
    return r;
  }
  if (!input.empty()) {
    // Small inputs only: written before reading so it must fit in the pipe buffer.
    [[maybe_unused]] auto n = write(in_pipe[1], input.data(), input.size());
  }
  close(in_pipe[1]);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (!killed) kill(pid, SIGKILL);
      killed = true;
      left = std::chrono::milliseconds(1000);
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      }
    }
    if (killed && n == 0) break;
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

RunResult run_netbox(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{netbox_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, timeout);
}

std::size_t rss_kib(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

std::vector<std::string> proxy_command(const std::filesystem::path& policy, unsigned short port,
                                       const std::filesystem::path& audit_db, std::vector<std::string> extra) {
  std::vector<std::string> argv{netbox_binary().string(), "proxy", "--policy", policy.string(), "--listen",
                                "127.0.0.1:" + std::to_string(port), "--audit-db", audit_db.string(),
                                "--threads", "2"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace netbox::test
