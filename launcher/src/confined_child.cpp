#include "netbox/launcher/confined_child.hpp"

#include "netbox/launcher/child_pipes.hpp"
#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/exit_status.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/mounts.hpp"
#include "netbox/launcher/supervisor.hpp"
#include "netbox/launcher/rtnetlink.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>


namespace netbox::launcher {
namespace {

// For the init's own lines on stderr (it never throws on a closed terminal).
void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void agent_fail(int exec_fd, int err, const char* step, int code) {
  ChildPipes::exec_failed(exec_fd, err, step);
  _exit(code);
}

// Everything exec needs, prepared before the agent's limits are set: from then on
// the agent allocates nothing (an address-space limit may leave no room to).
struct ExecPlan {
  std::vector<std::string> env;
  std::vector<char*> envp;
  std::vector<std::string> args;
  std::vector<char*> argv;
  std::vector<std::string> candidates;  // where the command may be, in PATH order
  std::vector<char*> sh_argv;           // /bin/sh FILE ARG... for scripts without #!
  bool explicit_path = false;           // the command names a path; no PATH search
  std::string cwd;                      // where the launcher was; empty: start in home
  std::string home;                     // the user's HOME, else /
  std::string moved_home;               // what the agent says when it starts in home instead
  std::string moved_root;               // ... or in / instead
};

ExecPlan plan_exec(const ChildSpec& spec, const ProxyPorts& ports) {
  ExecPlan p;
  p.env = agent_environment({spec.launcher_env, spec.keep_env, spec.set_env,
                             "http://" + spec.host_addr + ":" + std::to_string(ports.http), spec.user.name,
                             spec.user.home,
                             ports.socks ? "socks5h://" + spec.host_addr + ":" + std::to_string(ports.socks) : "",
                             spec.placeholders, !spec.mounts.trust.bundle.empty()});
  for (auto& e : p.env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.args = spec.command;
  p.args.push_back("/bin/sh");
  for (std::size_t i = 0; i + 1 < p.args.size(); ++i) p.argv.push_back(p.args[i].data());
  p.argv.push_back(nullptr);
  const std::string& cmd = spec.command.front();
  std::string path;
  for (const auto& e : p.env)
    if (e.starts_with("PATH=")) path = e.substr(5);
  p.explicit_path = cmd.find('/') != std::string::npos;
  if (p.explicit_path) {
    p.candidates.push_back(cmd);
  } else {
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(start, end - start);
      p.candidates.push_back((dir.empty() ? "." : dir) + "/" + cmd);
      start = end + 1;
    }
  }
  p.sh_argv.push_back(p.args.back().data());
  p.sh_argv.push_back(nullptr);  // the script's path goes here
  for (std::size_t i = 1; i + 1 < p.args.size(); ++i) p.sh_argv.push_back(p.args[i].data());
  p.sh_argv.push_back(nullptr);
  p.cwd = spec.cwd;
  p.home = spec.user.home.empty() ? "/" : spec.user.home;
  const std::string where = spec.cwd.empty() ? "the launcher's working directory is gone"
                                             : "the working directory " + spec.cwd +
                                                   " does not exist in the agent's view or its user may not enter it";
  p.moved_home = "netbox launch: " + where + "; the agent starts in " + p.home + "\n";
  p.moved_root = "netbox launch: " + where + "; the agent starts in /\n";
  return p;
}

// The launcher's working directory, looked up again in the agent's mount namespace as
// the agent's user: the directory the launcher holds may be one the fresh /tmp covers
// (or one the agent may not enter), and keeping it would leave the agent a way into it.
void enter_working_directory(const ExecPlan& p) {
  if (!p.cwd.empty() && ::chdir(p.cwd.c_str()) == 0) return;
  const bool home = ::chdir(p.home.c_str()) == 0;
  if (!home && ::chdir("/") != 0) return;
  const std::string& msg = home ? p.moved_home : p.moved_root;
  write_all(STDERR_FILENO, msg.data(), msg.size());
}

// Dispositions the launcher set for itself (it ignores job-control stops and SIGPIPE);
// the agent starts with the defaults.
void default_signal_dispositions() {
  int count = 0;
  const int* sigs = forwarded_signals(&count);
  for (int i = 0; i < count; ++i) signal(sigs[i], SIG_DFL);
  for (int sig : {SIGCHLD, SIGPIPE, SIGTTOU, SIGTTIN, SIGTSTP, SIGWINCH}) signal(sig, SIG_DFL);
  // Any other handler too (as posix_spawn does): the agent shares the init's memory until
  // its exec (start_agent), and a handler run here would write into it.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
      signal(sig, SIG_DFL);
  }
}

// Signals stay blocked (start_agent) until the agent is about to exec: one that killed it
// while it allocates in the init's memory would leave the init's heap half-updated.
void unblock_signals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The init is a copy of the launcher, so its /proc/PID/cmdline and environ would be
// the launcher's argv (policy and audit paths, --env values) and environment. The
// agent's /proc (hidepid=2) does not show the init to an unprivileged agent; this is for
// an agent run as root and for the host's ps. The memory is overwritten in place
// (PR_SET_MM would need CAP_SYS_RESOURCE, which containers often withhold); nothing in
// the init reads argv or environ after the fork.
void rename_init() {
  prctl(PR_SET_NAME, "netbox-init", 0, 0, 0);
  std::ifstream stat("/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  if (paren == std::string::npos) return;
  std::istringstream fields(line.substr(paren + 2));
  // After "(comm) " come fields 3, 4, ...; arg_start is field 48, then arg_end,
  // env_start, env_end.
  std::string skip;
  for (int field = 3; field < 48 && fields >> skip; ++field) {
  }
  unsigned long arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
  if (!(fields >> arg_start >> arg_end >> env_start >> env_end) || arg_end <= arg_start) return;
  char* args = reinterpret_cast<char*>(arg_start);
  const std::size_t size = arg_end - arg_start;
  std::memset(args, 0, size);
  std::strncpy(args, "netbox-init", size - 1);
  // A non-NUL last byte makes the kernel show the arguments up to the first NUL
  // (the setproctitle convention) instead of the whole zeroed area.
  if (size > 12) args[size - 1] = ' ';
  if (env_end > env_start) std::memset(reinterpret_cast<char*>(env_start), 0, env_end - env_start);
}

// execve with the PATH search of a shell; returns only on failure, with the exit status
// a shell would use: 127 when nothing was found, 126 when something found cannot run.
// (Unlike execvpe, a PATH entry the agent's user may not search counts as "not there".)
int exec_like_a_shell(ExecPlan& p, int* err) {
  *err = ENOENT;
  bool unexecutable = false;
  for (auto& full : p.candidates) {
    execve(full.c_str(), p.argv.data(), p.envp.data());
    int e = errno;
    if (e == ENOEXEC) {
      p.sh_argv[1] = full.data();
      execve("/bin/sh", p.sh_argv.data(), p.envp.data());
    }
    struct stat st {};
    bool exists = ::stat(full.c_str(), &st) == 0;
    if (p.explicit_path && !exists) return kExitNotFound;
    if (e != ENOENT && e != ENOTDIR && exists && !unexecutable) {
      unexecutable = true;
      *err = e;
    }
  }
  return unexecutable ? kExitNotExecutable : kExitNotFound;
}

// The agent, in the order of nsjail's contain.cc: environment, user ids, fds,
// parent-death signal, no_new_privs, capabilities, rlimits, seccomp last, exec.
[[noreturn]] void agent_main(const ChildSpec& spec, const ProxyPorts& ports, int exec_fd) {
  default_signal_dispositions();
  // A session of its own: kill(0, SIG) reaches only the agent's own processes, never
  // another launch started from the same shell, and nothing it does to a terminal
  // reaches the launcher's.
  if (setsid() < 0) agent_fail(exec_fd, errno, "setsid", kExitLauncherFailure);
  if (spec.controlling_terminal >= 0 && ioctl(spec.controlling_terminal, TIOCSCTTY, 0) != 0)
    agent_fail(exec_fd, errno, "TIOCSCTTY", kExitLauncherFailure);

  ExecPlan plan = plan_exec(spec, ports);

  const char* step = "";
  if (int err = drop_to_user(spec.user, &step)) agent_fail(exec_fd, err, step, kExitLauncherFailure);
  enter_working_directory(plan);
  if (exec_fd > 3) ::close_range(3, static_cast<unsigned>(exec_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(exec_fd) + 1, ~0U, 0);
  // Set after the uid change, which would clear it.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) agent_fail(exec_fd, errno, "PR_SET_PDEATHSIG", kExitLauncherFailure);
  if (int err = set_no_new_privs(&step)) agent_fail(exec_fd, err, step, kExitLauncherFailure);
  if (int err = clear_all_capabilities(&step)) agent_fail(exec_fd, err, step, kExitLauncherFailure);
  if (int err = apply_rlimits(spec.rlimits)) agent_fail(exec_fd, err, "setting rlimits", kExitLauncherFailure);
  if (int err = install_seccomp_program(spec.seccomp)) agent_fail(exec_fd, err, "loading the seccomp filter", kExitLauncherFailure);
  unblock_signals();
  int err = 0;
  int code = exec_like_a_shell(plan, &err);
  agent_fail(exec_fd, code == kExitNotFound ? ENOENT : err, "exec", code);
}

// --workdir-quota, once the agent has exited: everything else in the namespace is
// killed and reaped first, so nothing writes while the upper layer is read; then what
// was written is counted, and committed onto the host's workdir or discarded.
int finish_workdir_overlay(const WorkdirOverlay& overlay, bool commit, int agent_status, ChildPipes& pipes) {
  kill(-1, SIGKILL);
  for (;;) {
    pid_t r = waitpid(-1, nullptr, 0);
    if (r < 0 && errno != EINTR) break;
  }
  const std::uint64_t bytes = overlay_bytes_written(overlay.upper_fd);
  const std::string written = std::to_string(bytes);
  // For the agents row; the launcher reads it once this process is gone.
  pipes.report_workdir_bytes(bytes);
  std::string msg = "netbox launch: --workdir-quota: " + written + " bytes written in " + overlay.path;
  int status = agent_status;
  if (!commit) {
    msg += ", discarded (no --commit)\n";
  } else {
    try {
      commit_overlay(overlay.upper_fd, overlay.host_fd);
      msg += ", committed\n";
    } catch (const std::exception& e) {
      msg += "; --commit failed, partly applied: " + std::string(e.what()) + "\n";
      status = kExitLauncherFailure;
    }
  }
  write_all(STDERR_FILENO, msg.data(), msg.size());
  return status;
}

// Runs one setup step unless an earlier one failed; the first failure is kept.
template <typename Step>
void setup_step(std::string& error, Step&& step) {
  if (!error.empty()) return;
  try {
    step();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "failed";
  }
}

// The kernel's OOM killer picks by resident size, and the init, a copy of the launcher,
// counts every page it shares with it (an embedded proxy's buffers, a sanitizer's shadow):
// under a --memory limit it could be chosen over the agent's process that grew, and its
// death ends the whole agent. The agent's processes are made the OOM killer's first choice
// instead (raising the score needs no privilege; the agent, without CAP_SYS_RESOURCE, can
// never go below 0, nor below 1000 where the launcher has that capability, which makes it
// the floor), in its cgroup and on the host alike: an untrusted agent goes before anything
// of the host's. (Lowering the init's own score is
// refused where the launcher itself runs without CAP_SYS_RESOURCE, as in containers.)
void set_oom_score_adj(const char* value) {
  const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: without it the OOM killer chooses by size alone, as before
  [[maybe_unused]] const auto n = write(fd, value, std::strlen(value));
  close(fd);
}

// The init's own setup, before the launcher's go: hostname, mounts, loopback.
WorkdirOverlay setup_namespaces(const ChildSpec& spec, std::string& error) {
  WorkdirOverlay overlay;
  setup_step(error, [&] {
    if (sethostname(spec.hostname.data(), spec.hostname.size()) != 0)
      throw std::runtime_error(std::string("sethostname: ") + std::strerror(errno));
    overlay = setup_agent_mounts(spec.mounts);
    // The launcher's working directory may be below a mount just made; the agent
    // looks it up again (enter_working_directory).
    if (chdir("/") != 0) throw std::runtime_error(std::string("chdir /: ") + std::strerror(errno));
    set_link_up("lo");
  });
  return overlay;
}

// Everything but the workdir overlay's two descriptors and the report pipe.
void close_all_but_overlay(const WorkdirOverlay& overlay, int report_fd) {
  if (!overlay.active()) {
    ::close_range(3, ~0U, 0);
    return;
  }
  std::array<int, 3> keep{overlay.upper_fd, overlay.host_fd, report_fd};
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = std::max(from, static_cast<unsigned>(fd) + 1);
  }
  ::close_range(from, ~0U, 0);
}

// Forwards the launcher's signals to the agent and reaps until the agent is gone; exits
// with its status (the kernel then kills the rest of the namespace).
[[noreturn]] void forward_and_reap(const ChildSpec& spec, pid_t agent, const WorkdirOverlay& overlay,
                                   ChildPipes& pipes) {
  int count = 0;
  const int* sigs = forwarded_signals(&count);
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigset_t set;
  sigemptyset(&set);
  for (int i = 0; i < count; ++i) {
    sigaction(sigs[i], &sa, nullptr);
    sigaddset(&set, sigs[i]);
  }
  sigaction(SIGCHLD, &sa, nullptr);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  for (;;) {
    int status = 0;
    pid_t r;
    while ((r = waitpid(-1, &status, WNOHANG)) > 0)
      if (r == agent) {
        int code = shell_exit_status(status);
        if (overlay.active()) code = finish_workdir_overlay(overlay, spec.commit_workdir, code, pipes);
        _exit(code);
      }
    if (r < 0 && errno == ECHILD) _exit(kExitLauncherFailure);
    siginfo_t info{};
    int sig = sigwaitinfo(&set, &info);
    // In a session of its own, the init gets no terminal signals: whatever comes is
    // the launcher's forwarding.
    if (sig > 0 && sig != SIGCHLD) kill(agent, sig);
  }
}

struct AgentStart {
  const ChildSpec* spec;
  const ProxyPorts* ports;
  int exec_fd;
};

int agent_entry(void* arg) {
  const auto* start = static_cast<const AgentStart*>(arg);
  set_oom_score_adj("1000");
  agent_main(*start->spec, *start->ports, start->exec_fd);
}

// fs.suid_dumpable 1 leaves a task ptrace-able by its new uid's processes once its ids
// change (0 and 2 ask for CAP_SYS_PTRACE): until drop_to_user makes it undumpable again,
// the agent would be a way into the init's memory, and with it into the root init. A fork
// there exposes the agent's own copy for that moment, not the init.
bool agent_may_share_memory() {
  char value = '?';
  const int fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool read_one = read(fd, &value, 1) == 1;
  close(fd);
  return read_one && (value == '0' || value == '2');
}

// The agent starts as vfork starts a child (clone with CLONE_VM | CLONE_VFORK, as
// posix_spawn does): it runs in the init's memory, on a stack of its own, until its exec,
// and the init waits meanwhile. A fork copied the init's page tables (the init is a copy
// of the whole launcher), then both faulted pages in again, only for exec to throw that
// copy away (tests/bench/RESULTS.md, B6). So before its exec the agent changes nothing of
// the init's but the heap it allocates from (the init is stopped, never inside malloc,
// and every signal, glibc's own included, stays blocked until the agent's last step
// before exec): its ids are set with raw syscalls (set_ids_of_this_task); its handlers,
// fds, directory, limits, filter and oom_score_adj are its own task's (no CLONE_SIGHAND,
// CLONE_FILES, CLONE_FS; the kernel does not spread a vfork child's score to its parent).
// Where a ptrace of the agent by its user could reach that memory (agent_may_share_memory)
// and in sanitizer builds (which warn on a stack they did not make), it forks as before.
pid_t start_agent(const ChildSpec& spec, const ProxyPorts& ports, int exec_fd) {
  AgentStart start{&spec, &ports, exec_fd};
  sigset_t all, before;
  std::memset(&all, 0xff, sizeof all);
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &before, _NSIG / 8);
  pid_t pid = -1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr bool kShare = false;
#else
  constexpr bool kShare = true;
#endif
  constexpr std::size_t kStack = std::size_t{1} << 20;  // touched only as deep as agent_main goes
  void* stack = kShare && agent_may_share_memory()
                    ? mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0)
                    : MAP_FAILED;
  if (stack != MAP_FAILED) {
    ::mprotect(stack, 4096, PROT_NONE);  // a guard page: an overflow faults, never writes below
    pid = clone(agent_entry, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  } else {
    pid = fork();
    if (pid == 0) agent_entry(&start);
  }
  const int err = errno;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &before, nullptr, _NSIG / 8);
  if (stack != MAP_FAILED) munmap(stack, kStack);
  errno = err;
  return pid;
}

// PID 1 of the new PID namespace. A PID 1 ignores signals it has no handler for, so
// the agent cannot be PID 1 itself; this init forwards signals to it and reaps.
//
// Setup overlaps the launcher's own work (the protocol is child_pipes.hpp): mounts and
// loopback at once; netbox's files hidden once the proxy's ports arrive (the proxy has
// its audit database open by then, so its -wal and -shm exist too); the agent forked only
// on the launcher's release. A failure is reported only after the release was read, so
// the launcher never writes into a pipe nobody reads any more.
[[noreturn]] void init_main(const ChildSpec& spec, ChildPipes& pipes) {
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // Out of the launcher's session and process group (so no terminal signal or kill(0)
  // meant for the launcher reaches it), holding the agent's stdio, not the launcher's.
  setsid();
  rename_init();
  for (int fd = 0; fd < 3; ++fd)
    if (spec.stdio[static_cast<std::size_t>(fd)] != fd) dup2(spec.stdio[static_cast<std::size_t>(fd)], fd);
  std::string error;
  WorkdirOverlay overlay = setup_namespaces(spec, error);
  // Nothing here means the launcher gave up (or died) before the proxy had the sockets.
  const std::optional<ProxyPorts> ports = pipes.read_ports();
  if (!ports) _exit(kExitLauncherFailure);
  setup_step(error, [&] { hide_paths(spec.hidden); });
  if (!pipes.read_release()) _exit(kExitLauncherFailure);
  if (!error.empty()) {
    pipes.reply_failed(error);
    _exit(kExitLauncherFailure);
  }
  pid_t agent = start_agent(spec, *ports, pipes.exec_fd());
  if (agent < 0) {
    pipes.reply_failed(std::string("clone of the agent: ") + std::strerror(errno));
    _exit(kExitLauncherFailure);
  }
  pipes.reply_ready();
  pipes.close_exec();
  close_all_but_overlay(overlay, pipes.report_fd());
  forward_and_reap(spec, agent, overlay, pipes);
}

}  // namespace

ConfinedChild ConfinedChild::spawn(const ChildSpec& spec) {
  ChildPipes pipes = ChildPipes::open();
  // clone without a new stack behaves like fork, in new namespaces.
  long pid = syscall(SYS_clone, CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD,
                     nullptr, nullptr, nullptr, nullptr);
  if (pid < 0)
    throw LaunchError(kExitLauncherFailure, std::string("cannot create the agent's namespaces (clone): ") +
                                                std::strerror(errno));
  if (pid == 0) {
    pipes.keep_child_ends();
    init_main(spec, pipes);
  }
  pipes.keep_launcher_ends();
  ConfinedChild child(std::move(pipes));
  child.pid_ = static_cast<pid_t>(pid);
  child.command0_ = spec.command.empty() ? "" : spec.command.front();
  return child;
}

ConfinedChild::ConfinedChild(ConfinedChild&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pipes_(std::move(o.pipes_)),
      owned_(std::exchange(o.owned_, false)),
      command0_(std::move(o.command0_)) {}

ConfinedChild::~ConfinedChild() { kill_and_reap(); }

void ConfinedChild::kill_and_reap() noexcept {
  if (owned_ && pid_ > 0) {
    kill(pid_, SIGKILL);  // PID 1 of the namespace: everything in it dies too
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  owned_ = false;
}

void ConfinedChild::send_ports(const ProxyPorts& ports) {
  if (!pipes_.send_ports(ports))
    throw LaunchError(kExitLauncherFailure, "the confined child exited before its network was set up");
}

void ConfinedChild::release() {
  if (!pipes_.send_release())
    throw LaunchError(kExitLauncherFailure, "the confined child exited before its network was set up");
  const SetupReply reply = pipes_.read_setup_reply();
  if (reply.ready) return;
  if (!reply.error.empty())
    throw LaunchError(kExitLauncherFailure, "setting up the agent's namespaces failed: " + reply.error);
  throw LaunchError(kExitLauncherFailure, "the confined child exited during setup");
}

void ConfinedChild::wait_for_exec() {
  const std::optional<ExecFailure> f = pipes_.read_exec_failure();
  if (!f) return;
  if (f->step[0] == '\0') throw LaunchError(kExitLauncherFailure, "the agent exited before exec");
  if (std::strcmp(f->step, "exec") == 0) {
    if (f->err == ENOENT) throw LaunchError(kExitNotFound, command0_ + ": command not found");
    throw LaunchError(kExitNotExecutable, command0_ + ": cannot execute: " + std::strerror(f->err));
  }
  throw LaunchError(kExitLauncherFailure,
                    std::string("preparing the agent failed at ") + f->step + ": " + std::strerror(f->err));
}

std::optional<std::uint64_t> ConfinedChild::workdir_bytes_written() { return pipes_.read_workdir_bytes(); }

}  // namespace netbox::launcher
