#include "netbox/launcher/supervisor.hpp"

#include "netbox/launcher/exit_status.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <iterator>

namespace netbox::launcher {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t supervised_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  return set;
}

long to_ms(const timeval& tv) { return tv.tv_sec * 1000L + tv.tv_usec / 1000L; }

timespec to_timespec(std::chrono::steady_clock::duration d) {
  if (d < std::chrono::steady_clock::duration::zero()) d = {};
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(d);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d - secs);
  return timespec{static_cast<time_t>(secs.count()), static_cast<long>(ns.count())};
}

}  // namespace

const int* forwarded_signals(int* count) {
  *count = static_cast<int>(std::size(kForwarded));
  return kForwarded;
}

void block_supervised_signals() {
  sigset_t set = supervised_set();
  // Read by the stdio relay's signalfd, so it must reach no thread as a signal.
  sigaddset(&set, SIGWINCH);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::string AgentOutcome::resource_usage_json() const {
  return "{\"user_ms\":" + std::to_string(user_ms) + ",\"sys_ms\":" + std::to_string(sys_ms) +
         ",\"max_rss_kb\":" + std::to_string(max_rss_kb) + (cgroup_json.empty() ? "" : ",\"cgroup\":" + cgroup_json) +
         (workdir_bytes_written ? ",\"workdir_bytes_written\":" + std::to_string(*workdir_bytes_written) : "") + "}";
}

AgentOutcome supervise(pid_t child, const SuperviseOptions& options) {
  using Clock = std::chrono::steady_clock;
  const sigset_t set = supervised_set();
  // A plain time_point plus a flag: GCC misreads std::optional<time_point> here.
  bool has_deadline = options.timeout.has_value();
  Clock::time_point deadline = has_deadline ? Clock::now() + *options.timeout : Clock::time_point{};
  enum class Phase { running, terminating, killing } phase = Phase::running;
  AgentOutcome outcome;
  for (;;) {
    int status = 0;
    struct rusage ru {};
    pid_t r = wait4(child, &status, WNOHANG, &ru);
    if (r == child) {
      outcome.exit_status = shell_exit_status(status);
      outcome.user_ms = to_ms(ru.ru_utime);
      outcome.sys_ms = to_ms(ru.ru_stime);
      outcome.max_rss_kb = ru.ru_maxrss;
      return outcome;
    }
    if (r < 0 && errno != EINTR) {
      outcome.exit_status = 125;
      return outcome;
    }
    // Without a deadline still wake up now and then, in case a SIGCHLD was coalesced.
    timespec wait = has_deadline ? to_timespec(deadline - Clock::now()) : timespec{1, 0};
    siginfo_t info{};
    int sig = sigtimedwait(&set, &info, &wait);
    if (sig > 0 && sig != SIGCHLD) {
      // Terminal signals too: the agent is in a session of its own, so the launcher's
      // terminal never signals it directly.
      if (options.thaw) options.thaw();
      kill(child, sig);
      continue;
    }
    if (sig < 0 && errno == EAGAIN && has_deadline && Clock::now() >= deadline) {
      if (options.thaw) options.thaw();
      if (phase == Phase::running) {
        // The signal first: whatever happens to the write (a stderr nobody reads),
        // the agent is told.
        outcome.timed_out = true;
        kill(child, SIGTERM);
        phase = Phase::terminating;
        deadline = Clock::now() + options.kill_grace;
        std::fprintf(stderr, "netbox launch: --timeout reached: sending SIGTERM to the agent\n");
      } else if (phase == Phase::terminating) {
        kill(child, SIGKILL);
        std::fprintf(stderr, "netbox launch: the agent is still running %lld ms after SIGTERM: sending SIGKILL\n",
                     static_cast<long long>(options.kill_grace.count()));
        phase = Phase::killing;
        has_deadline = false;
      }
    }
  }
}

}  // namespace netbox::launcher
