#include "netbox/launcher/launch.hpp"

#include "netbox/launcher/agent_link.hpp"
#include "netbox/launcher/ask_prompt.hpp"
#include "netbox/launcher/agent_stdio.hpp"
#include "netbox/launcher/terminal_lock.hpp"
#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/cleanup.hpp"
#include "netbox/launcher/confined_child.hpp"
#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/git_commondir.hpp"
#include "netbox/launcher/guardian_enforcer.hpp"
#include "netbox/launcher/hidden_paths.hpp"
#include "netbox/launcher/launch_plan.hpp"
#include "netbox/launcher/launch_report.hpp"
#include "netbox/launcher/operator_socket.hpp"
#include "netbox/launcher/credential_secrets.hpp"
#include "netbox/launcher/proxy_log_relay.hpp"
#include "netbox/launcher/privileges.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/launcher/supervisor.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <thread>

namespace netbox::launcher {
namespace {

std::string command_line(const std::vector<std::string>& command) {
  std::string out;
  for (const auto& a : command) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

// A descriptor 0, 1 or 2 that is not open would be taken by the first pipe.
void open_missing_standard_fds() {
  for (int fd = 0; fd < 3; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDWR);
      if (n >= 0 && n != fd) {
        ::dup2(n, fd);
        ::close(n);
      }
    }
}

// The agent's stdio is relayed by the launcher: a job-control stop (the terminal's
// SIGTTOU, SIGTTIN, SIGTSTP) must never stop that, nor the supervision and --timeout;
// a reader gone away is an EPIPE to handle, not a death. The agent gets defaults back.
void ignore_job_control_and_sigpipe() {
  for (int sig : {SIGTTOU, SIGTTIN, SIGTSTP, SIGPIPE}) ::signal(sig, SIG_IGN);
}

// A running proxy's agents each need a synthetic pool of their own (it refuses overlaps).
policy::Cidr shared_proxy_pool(const Lease& lease) {
  const Ipv4Network range{kSyntheticPool.base.to_v4().to_uint(), static_cast<int>(kSyntheticPool.prefix)};
  const Ipv4Network mine = synthetic_pool_for(lease, range);
  return {boost::asio::ip::address_v4(mine.address), static_cast<unsigned>(mine.prefix)};
}

// A launch whose proxy inspects gives the agent the netbox CA beside the host's roots
// (agent_trust.hpp): read as root, so a CA or store that cannot be read stops here.
AgentTrustFiles read_agent_trust(const LaunchPlan& plan) {
  const LaunchOptions& o = plan.options;
  if (o.ca_dir) {
    try {
      return agent_trust_files(tls::CertificateAuthority::load(*o.ca_dir).certificate_pem());
    } catch (const tls::CaError& e) {
      // Worded as the proxy words it (inspector.cpp): e.what() names the file.
      throw LaunchError(kExitUsage, "--ca-dir " + o.ca_dir->string() + ": " + e.what());
    }
  }
  return plan.running_proxy_ca.empty() ? AgentTrustFiles{} : agent_trust_files(plan.running_proxy_ca);
}

// The log file is the launcher's (O_CLOEXEC, and the child closes every descriptor above
// 2): the agent can neither read nor truncate what the proxy says about it.
int open_log_file(const LaunchOptions& o) {
  if (!o.log_file) return -1;
  const int fd = ::open(o.log_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw LaunchError(kExitUsage, "--log-file " + *o.log_file + ": " + std::strerror(errno));
  return fd;
}

// Every line of the embedded proxy to the relay (proxy_log_relay.hpp), or a running proxy.
std::unique_ptr<ProxyLink> open_proxy(const LaunchPlan& plan, const ProxyLogRelay& relay) {
  const LaunchOptions& o = plan.options;
  if (o.proxy_control) {
    auto prompt = o.ask ? AskPrompt::open() : nullptr;  // null: the agent owns the terminal, or there is none
    if (o.ask && !prompt && !o.quiet) std::cerr << ask_elsewhere_hint(true);
    return make_control_client(*o.proxy_control, std::move(prompt));
  }
  const auto pool = *parse_ipv4_network(o.subnet);
  const policy::Cidr pool_cidr{boost::asio::ip::address_v4(pool.address), static_cast<unsigned>(pool.prefix)};
  EmbeddedLog log{.fd = relay.write_fd(), .all_requests = true, .quiet = false, .json = true};
  return make_embedded_proxy(*plan.policy, o.audit_db, pool_cidr, log, {o.ca_dir, o.upstream_ca},
                             {o.ask, o.policy_file, o.quiet}, prepare_operator_socket(o.state_dir, ::getpid()));
}

// The lease holds the agent's uid of its own (when it gets one; its HOME tmpfs is its own
// too) and numbers its cgroup and, with a running proxy, its synthetic pools.
void use_lease(const LaunchPlan& plan, const Lease& lease, ChildSpec& spec, SandboxReport& report) {
  if (!lease.uid) return;
  const uid_t shared_uid = spec.user.uid;
  use_launch_uid(spec.user, *lease.uid);
  if (spec.mounts.home_uid == shared_uid) spec.mounts.home_uid = spec.mounts.home_gid = *lease.uid;
  report.user = describe_launch_uid(plan.who, *lease.uid);
}

// The agent's sockets, made by a thread that enters its namespace (the init sets up the
// rest meanwhile).
AgentLink make_agent_sockets(const LaunchPlan& plan, const ConfinedChild& child) {
  try {
    return AgentLink::make(child.pid(), plan.dns_view);
  } catch (const std::runtime_error& e) {
    throw LaunchError(kExitLauncherFailure, e.what());
  }
}

// Who the agent is, for the proxy to serve its sockets as its own and write its agents row.
AgentIdentity agent_identity(const LaunchPlan& plan, const SandboxReport& report, const Lease& lease,
                             const ConfinedChild& child, AgentCgroup& cgroup, const AgentLink& sockets) {
  const bool shared = plan.options.proxy_control.has_value();
  AgentIdentity identity;
  identity.name = plan.name;
  identity.profile = plan.profile;
  identity.pid = child.pid();
  identity.command_line = command_line(plan.options.command);
  identity.policy_digest = plan.policy ? plan.policy->digest : std::string();
  identity.sandbox = render_report_json(report);
  identity.sockets = sockets.sockets();
  // The embedded proxy has this agent only; a running one gets pools of its own per agent
  // (numbered by the lease, so launches at once propose different ones).
  if (plan.dns_view) {
    identity.dns_pool = shared ? shared_proxy_pool(lease) : kSyntheticPool;
    identity.dns_pool6 = shared ? policy::Cidr::parse(synthetic_pool6_for(lease)) : kSyntheticPool6;
  }
  identity.credentials = plan.credentials.secrets;
  if (plan.options.ask) identity.ask = proxy::AskSettings{plan.options.ask_timeout};
  identity.enforcer = guardian_enforcer(cgroup, child.pid());
  return identity;
}

// The proxy, prepared on a thread of its own (its audit store's open is the longest step
// of a launch), then given the agent. Only that thread touches the proxy until the join.
class ProxyStart {
 public:
  explicit ProxyStart(ProxyLink& link) : link_(link), preparing_([&link] { link.prepare(); }) {}
  void wait_prepared() {
    if (preparing_.joinable()) preparing_.join();
  }
  // Throws LaunchError with the proxy's reason (a store that cannot be opened, a running
  // proxy that refuses the registration).
  void attach(const AgentIdentity& agent) {
    wait_prepared();
    link_.attach(agent);
    attached_ = true;
  }
  bool attached() const { return attached_; }

 private:
  ProxyLink& link_;
  std::jthread preparing_;
  bool attached_ = false;
};

// The child hides netbox's files; it forks the agent only on release(), once it is in the
// agent's cgroup. Throws with the agent's reason (127, 126, 125) when it could not exec.
// The child is handed over (to supervise) by the caller, once the proxy has the agent.
void start_agent(ConfinedChild& child, AgentCgroup& cgroup, const ProxyPorts& ports) {
  child.send_ports(ports);
  cgroup.finish_attach();
  child.release();
  child.wait_for_exec();
}

AgentOutcome supervise_agent(const LaunchPlan& plan, ConfinedChild& child, AgentCgroup& cgroup) {
  SuperviseOptions supervise_options;
  if (plan.options.timeout_seconds)
    supervise_options.timeout = std::chrono::milliseconds(static_cast<long long>(*plan.options.timeout_seconds * 1000));
  supervise_options.kill_grace = plan.options.kill_grace;
  // A frozen agent (a guardian's freeze) would hold a signal pending for ever: thawed first.
  supervise_options.thaw = [&cgroup] {
    try {
      if (cgroup.can_freeze() && cgroup.frozen()) cgroup.thaw();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "netbox launch: could not thaw the frozen agent to signal it: %s\n", e.what());
    }
  };
  AgentOutcome outcome = supervise(child.pid(), supervise_options);
  outcome.workdir_bytes_written = child.workdir_bytes_written();
  if (!cgroup.dirs().empty()) {
    const CgroupUsage usage = cgroup.usage();
    outcome.cgroup_json = usage.json();
    if (auto line = oom_report(usage, plan.cgroup.limits, outcome.exit_status); !line.empty())
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  return outcome;
}

void print_summary(const LaunchPlan& plan, const AgentOutcome& outcome, const ProxyLogRelay& relay,
                   std::chrono::steady_clock::time_point started) {
  const LaunchOptions& o = plan.options;
  if (o.quiet) return;
  LaunchSummary summary{plan.name, outcome.exit_status, outcome.timed_out,
                        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started),
                        std::nullopt, o.proxy_control ? plan.own.proxy_audit_db : plan.audit_db, o.mode};
  if (!o.proxy_control) {
    summary.allowed_refused = std::pair{relay.allowed(), relay.refused()};
    summary.reported = relay.reported();
  }
  std::cerr << render_summary(summary) << std::flush;
}

}  // namespace

// The steps in the order they run (nsjail's containProc is the model). Objects declared
// earlier outlive later ones: on an error the agent is detached first, the proxy stopped,
// then the child killed and reaped, its output copied, the cgroup removed, the lease
// released and the log closed.
int run(const LaunchPlan& plan, std::chrono::steady_clock::time_point started) {
  const LaunchOptions& o = plan.options;
  require_launcher_capabilities();
  ChildSpec spec = plan.child;
  SandboxReport report = plan.report;
  spec.mounts.trust = read_agent_trust(plan);
  open_missing_standard_fds();
  ignore_job_control_and_sigpipe();
  const int log_fd = open_log_file(o);
  ScopeExit close_log([log_fd] {
    if (log_fd >= 0) ::close(log_fd);
  });
  // Before any thread exists (the log relay's and the proxy's come after the clone), so
  // that only the supervisor ever sees these signals.
  block_supervised_signals();
  const LaunchLease held(allocate_lease(*parse_ipv4_network(o.subnet), o.state_dir, getpid(), plan.who.own_uid));
  const Lease& lease = held.lease();
  // Made and limited before the child exists: a limit that cannot be had stops here.
  // Removed (whatever is left in it killed) on every path after the child is reaped.
  AgentCgroup cgroup(plan.cgroup, "netbox-" + lease.name + "-" + std::to_string(getpid()), o.state_dir);
  use_lease(plan, lease, spec, report);
  // The secrets stay with the launcher: gone from its own environment block before the clone.
  scrub_launcher_environment(plan.credentials.secret_variables);
  if (!o.quiet) std::cerr << render_banner(report) << std::flush;
  // Declared before the child: on an error the child is killed and reaped first, and
  // only then is what it wrote copied out.
  AgentStdio stdio = AgentStdio::open();
  spec.stdio = stdio.agent_fds();
  spec.controlling_terminal = stdio.controlling_terminal();
  // Cloned while the launcher is still single-threaded: the child and the agent it forks
  // allocate memory, and a lock of the allocator that another thread held at the clone
  // would stay held in them for ever (a raw clone runs no atfork handler). So the log
  // relay and the proxy, whose threads allocate, start only now; the child waits for the
  // ports anyway.
  ConfinedChild child = ConfinedChild::spawn(spec);
  ProxyLogRelay relay(log_fd, o.quiet);
  std::unique_ptr<ProxyLink> link = open_proxy(plan, relay);
  // Into the cgroup before it forks the agent (on release()): nothing escapes the limits.
  cgroup.start_attach(child.pid());
  stdio.start();
  ProxyStart proxy(*link);
  const AgentLink sockets = make_agent_sockets(plan, child);
  const AgentIdentity identity = agent_identity(plan, report, lease, child, cgroup, sockets);
  AgentOutcome failed;
  failed.exit_status = kExitLauncherFailure;
  ScopeExit detach_on_error([&] {
    proxy.wait_prepared();
    link->detach(failed);
  });
  // The embedded proxy need not be ready for the agent to start: its sockets listen
  // already, so what it sends first waits in their queues until the proxy, given the
  // agent, accepts (its agents row written first). If the proxy then fails, the agent is
  // killed (the child is handed over only after the attach) before anything it sent was
  // accepted. A running proxy may refuse the registration, and a store not made yet would
  // show its -wal and -shm to the agent after the init hid the rest: then, as before, the
  // agent starts only once the proxy has it.
  if (o.proxy_control || !hidden_paths_exist(spec.hidden)) proxy.attach(identity);
  try {
    start_agent(child, cgroup, sockets.ports());
  } catch (const LaunchError& e) {
    failed.exit_status = e.exit_code();
    // The agents row says how it ended (127, 126, ...), as when it was attached first.
    if (!proxy.attached()) try {
        proxy.attach(identity);
      } catch (const std::exception&) {  // the agent's own reason is the one to report
      }
    throw;
  }
  if (!proxy.attached()) {
    try {
      proxy.attach(identity);
    } catch (...) {
      // Dead before its sockets close (below, on the way out): the agent neither sees a
      // reset of what it sent nor runs on after the proxy failed.
      child.kill_and_reap();
      throw;
    }
  }
  child.hand_over();
  detach_on_error.dismiss();
  AgentOutcome outcome = supervise_agent(plan, child, cgroup);
  // Before anything else: the host's git may run in the project as soon as we return.
  for (const auto& moved : set_aside_new_commondirs(spec.mounts.git_folders_without_commondir))
    std::cerr << "netbox launch: the agent made " << moved.substr(0, moved.find(" -> "))
              << ", which would make the host's git take its config and hooks from the folder it names; set aside: "
              << moved << "\n";
  // The agent is gone: its namespace is the kernel's to take down (nothing here waits for
  // that); its last output is copied (once a question open on the terminal is given up)
  // and the proxy records the exit.
  end_terminal_questions();
  stdio.finish();
  link->detach(outcome);
  link.reset();  // the embedded proxy's last lines are in the relay
  relay.finish();
  print_summary(plan, outcome, relay, started);
  return outcome.timed_out ? kExitTimeout : outcome.exit_status;
}

int launch(const LaunchOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  // The launcher reads the credential secrets (and runs the embedded proxy): no core file,
  // no ptrace or /proc/PID/mem by a process of the same user without CAP_SYS_PTRACE.
  // netbox-init, cloned from it, inherits this; the agent's exec resets it for the agent.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const LaunchPlan plan = plan_launch(options);
  if (plan.options.explain) {
    std::cout << render_plan(plan);
    return 0;
  }
  return run(plan, started);
}

}  // namespace netbox::launcher
