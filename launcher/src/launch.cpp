#include "netbox/launcher/launch.hpp"

#include "netbox/launcher/agent_link.hpp"
#include "netbox/launcher/agent_stdio.hpp"
#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/agent_user_choice.hpp"
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/cleanup.hpp"
#include "netbox/launcher/confined_child.hpp"
#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/filesystem_view.hpp"
#include "netbox/launcher/guardian_enforcer.hpp"
#include "netbox/launcher/hidden_paths.hpp"
#include "netbox/launcher/launch_report.hpp"
#include "netbox/launcher/credential_secrets.hpp"
#include "netbox/launcher/policy_sandbox.hpp"
#include "netbox/launcher/proxy_log_relay.hpp"
#include "netbox/launcher/privileges.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/sandbox_report.hpp"
#include "netbox/launcher/seccomp_profile.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/launcher/supervisor.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/audit/location.hpp"
#include "netbox/policy/load.hpp"
#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/enforceable_policy.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

namespace netbox::launcher {
namespace {

std::string default_name(const std::string& command) {
  std::string base = std::filesystem::path(command).filename().string();
  // A command's file name may hold anything; the agent's name only what a profile may be called.
  for (char& c : base)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
      c = '_';
  if (base.size() > 48) base.resize(48);
  if (base.empty()) base = "agent";
  std::random_device rd;
  char id[8];
  std::snprintf(id, sizeof id, "%06x", rd() & 0xffffffU);
  return base + "-" + id;
}

std::string command_line(const std::vector<std::string>& command) {
  std::string out;
  for (const auto& a : command) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

std::optional<policy::Policy> load_policy(const LaunchOptions& o) {
  if (!o.policy_file && !o.policy_text)
    return o.proxy_control ? std::nullopt : std::optional(policy::default_policy());
  try {
    auto p = o.policy_file ? policy::load_policy_file(*o.policy_file)
                           : policy::parse_policy(o.policy_text->second, o.policy_text->first);
    // The embedded proxy would refuse it after the banner; say so before anything runs.
    if (!o.proxy_control) proxy::check_enforceable(p, o.ca_dir.has_value());
    return p;
  } catch (const std::exception& e) {
    throw LaunchError(kExitUsage, std::string("--policy: ") + e.what());
  }
}

// An explicit --profile must exist in a policy we hold; without one, an agents entry
// named like the agent applies, else the top level. A running proxy checks its own.
std::string profile_for(const LaunchOptions& o, const std::optional<policy::Policy>& policy, const std::string& name) {
  if (!o.proxy_control && policy) {
    if (!o.profile.empty() && !policy->agents.contains(o.profile))
      throw LaunchError(kExitUsage, "--profile '" + o.profile + "': the policy " + policy->source +
                                        " has no agents." + o.profile + " entry");
    if (o.profile.empty() && policy->agents.contains(name)) return name;
  }
  return o.profile;
}

// The secrets of the profile's `credentials`, read now, before anything is created. A
// running proxy decides with its own policy: without --policy, the launcher reads the
// file that proxy names (the proxy checks the secrets against its profile again).
LaunchCredentials launch_credentials(const LaunchOptions& o, const std::optional<policy::Policy>& policy,
                                     const std::optional<std::filesystem::path>& proxy_policy,
                                     const std::string& profile, const std::map<std::string, std::string>& env) {
  std::optional<policy::Policy> served;
  if (!policy && o.proxy_control && proxy_policy) {
    try {
      served = policy::load_policy_file(*proxy_policy);
    } catch (const std::exception& e) {
      throw LaunchError(kExitUsage, "the running proxy's policy " + proxy_policy->string() + ": " + e.what());
    }
  }
  const policy::Policy* p = policy ? &*policy : served ? &*served : nullptr;
  if (!p) return {};
  if (profile.empty()) return read_credentials(p->base, "credentials", env);
  auto it = p->agents.find(profile);
  if (it == p->agents.end()) return {};  // the proxy refuses the profile itself
  return read_credentials(it->second, "agents." + profile + ".credentials", env);
}

// --mode report: the profile the agent is decided with turns its refusals into reports
// (policy::Mode::report; decide.cpp keeps internal addresses refused in it).
void apply_mode(const LaunchOptions& o, policy::Policy& policy, const std::string& profile) {
  if (o.mode != "report") return;
  auto it = policy.agents.find(profile);
  (it == policy.agents.end() ? policy.base : it->second).mode = policy::Mode::report;
}

// The profile's sandbox (an agent's entry already holds the top level's keys it does not name).
const policy::SandboxSettings& sandbox_for(const policy::Policy& policy, const std::string& profile) {
  auto it = policy.agents.find(profile);
  return it == policy.agents.end() ? policy.base.sandbox : it->second.sandbox;
}

std::uint64_t tmp_bytes(const std::string& flag) {
  auto v = parse_size(flag);
  if (!v || *v == 0 || *v == RLIM_INFINITY)
    throw LaunchError(kExitUsage, "--tmp-size '" + flag + "': expected a size such as 256M or 1G");
  return *v;
}

// The kernel takes at most 64 bytes of hostname.
std::string hostname_for(const std::string& name) { return name.substr(0, 64); }

std::string working_directory() {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  return ec ? std::string() : cwd.string();
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

}  // namespace

int launch(const LaunchOptions& flags) {
  const auto started = std::chrono::steady_clock::now();
  // The launcher reads the credential secrets (and runs the embedded proxy): no core file,
  // no ptrace or /proc/PID/mem by a process of the same user without CAP_SYS_PTRACE.
  // netbox-init, cloned from it, inherits this; the agent's exec resets it for the agent.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Everything a user can get wrong is checked before anything is created.
  if (flags.command.empty())
    throw LaunchError(kExitUsage, "a command is required: netbox launch [OPTIONS] -- COMMAND [ARG...]");
  // The policy first: its `sandbox` settings fill in the flags not given.
  std::optional<policy::Policy> policy = load_policy(flags);
  if (!flags.name.empty())
    if (auto problem = proxy::agent_name_problem(flags.name); !problem.empty())
      throw LaunchError(kExitUsage, "--name " + problem);
  const std::string name = flags.name.empty() ? default_name(flags.command.front()) : flags.name;
  const std::string profile = profile_for(flags, policy, name);
  const LaunchOptions o = policy ? with_policy_sandbox(flags, sandbox_for(*policy, profile)) : flags;
  if (o.mode != "enforce" && o.mode != "report")
    throw LaunchError(kExitUsage, "--mode '" + o.mode + "': expected enforce or report");
  // A running proxy decides with its own policy, where an agents entry sets "mode".
  if (o.mode == "report" && o.proxy_control)
    throw LaunchError(kExitUsage, "--mode report: only for the embedded proxy; a running proxy decides with its own "
                                  "policy: give the agent's entry \"mode\": \"report\" there (agents." +
                                      (profile.empty() ? name : profile) + ".mode)");
  if (policy) apply_mode(o, *policy, profile);
  // The agent's working directory (--workdir or the policy's, else the launcher's own) is
  // the agent's: a database there is the agent's to read and lock. The default location
  // is made and checked by the embedded proxy.
  // The launcher hides the store's file from the agent and makes its folder: a server
  // address has neither, so a launch writes to a file, or to a proxy that writes to the
  // server (--proxy-control).
  if (audit::is_postgresql(o.audit_db.string()))
    throw LaunchError(kExitUsage, "--audit-db postgresql://...: netbox launch writes its own audit to an SQLite file; to audit into "
                                      "PostgreSQL, run `netbox proxy --audit-db postgresql://... --control SOCKET` "
                                      "and launch with --proxy-control SOCKET");
  if (!o.audit_db.empty() && !o.proxy_control) {
    try {
      const auto agent_dir = o.workdir ? std::filesystem::absolute(*o.workdir) : std::filesystem::current_path();
      audit::check_db_location(o.audit_db, "--audit-db", agent_dir);
    } catch (const std::exception& e) {
      throw LaunchError(kExitUsage, e.what());
    }
  }
  validate_env_flags(o.env, o.keep_env);
  auto pool = parse_ipv4_network(o.subnet);
  if (!pool)
    throw LaunchError(kExitUsage, "--subnet '" + o.subnet + "': expected an IPv4 network such as 10.213.0.0/16");
  if (o.upstream_ca && !o.ca_dir) throw LaunchError(kExitUsage, "--upstream-ca needs --ca-dir DIR (TLS inspection)");
  if (o.proxy_control && o.ca_dir)
    throw LaunchError(kExitUsage, "--ca-dir: only for the embedded proxy; a running proxy inspects with its own --ca-dir");
  if (o.proxy_control && (o.log_file || o.quiet))
    throw LaunchError(kExitUsage, std::string(o.log_file ? "--log-file" : "--quiet") +
                                      ": only for the embedded proxy; a running proxy logs where it was started");
  if (o.network != "transparent" && o.network != "proxy-vars")
    throw LaunchError(kExitUsage, "--network '" + o.network + "': expected transparent or proxy-vars");
  const bool dns_view = o.network == "transparent";
  if (o.timeout_seconds && (!std::isfinite(*o.timeout_seconds) || *o.timeout_seconds <= 0))
    throw LaunchError(kExitUsage, "--timeout: expected a positive number of seconds");
  const CgroupPlan cgroup_plan = describe_cgroup_plan(o);
  // With a pids limit on the agent's cgroup, that bounds the launch; RLIMIT_NPROC counts
  // every process of the agent's user on the machine, so it is lifted unless given.
  const auto rlimits = agent_rlimits(o.rlimits, cgroup_plan.limits.pids && cgroup_plan.parents.contains("pids"));
  const std::uint64_t tmp_size_bytes = tmp_bytes(o.tmp_size);
  const SeccompFilter seccomp = seccomp_filter_for(o.seccomp);
  auto launcher_env = current_environment();
  const AgentUserChoice who = choose_agent_user(o.user, launcher_env);
  const AgentUser& user = who.agent;
  DegradedLayers degraded(o.allow_degraded);
  // The embedded proxy's database, the one path every layer protects (not writable by
  // --rw, hidden, warned about in the workdir). An empty path (no database) is none.
  // No --audit-db means the default location, which the embedded proxy opens.
  const std::optional<std::filesystem::path> audit_db =
      o.proxy_control ? std::nullopt
                      : std::optional(o.audit_db.empty() ? audit::default_db_path() : std::filesystem::path(o.audit_db));
  const FilesystemRequest fs_request = filesystem_request(o, who, audit_db, working_directory());
  const FilesystemView view = plan_filesystem_view(fs_request, degraded);
  AgentMounts mounts = view.mounts;
  mounts.tmp_bytes = tmp_size_bytes;
  const std::string agent_cwd = view.workdir.empty() ? fs_request.cwd : view.workdir;
  NetboxFiles own;
  own.audit_db = audit_db;
  own.policy = o.policy_file;
  own.control_socket = o.proxy_control;
  if (o.ca_dir) own.ca_key = *o.ca_dir / "ca.key";
  std::string running_proxy_ca;  // the CA a running proxy inspects with
  if (o.proxy_control) {
    // A running proxy's own policy and store are its files, not this launch's: it names them.
    const RunningProxyFiles proxy_files = running_proxy_files(*o.proxy_control);
    own.proxy_policy = proxy_files.policy;
    own.proxy_audit_db = proxy_files.audit_db;
    running_proxy_ca = proxy_files.ca_pem;
  }
  LaunchCredentials credentials = launch_credentials(o, policy, own.proxy_policy, profile, launcher_env);
  forget_secret_variables(launcher_env, credentials.secret_variables);
  if (!credentials.secrets.empty()) {
    auto env = launcher_env;
    for (const auto& v : credentials.secret_variables) env.erase(v);
    refuse_secrets_in(agent_environment({env, o.keep_env, o.env, {}, user.name, user.home, {}, credentials.placeholders}),
                      credentials);
  }
  std::vector<std::filesystem::path> bound, writable;
  for (const auto& b : mounts.binds) {
    if (b.pin) continue;
    bound.push_back(b.path);
    bound.push_back(b.source);
    if (b.writable) writable.push_back(b.source);
  }
  // A command named by its path keeps its folder visible (PATH lookups are in system folders).
  const std::string& command = o.command.front();
  const HiddenPaths own_hidden = plan_hidden_paths(
      own, {agent_cwd, user.home, command.find('/') != std::string::npos ? command : std::string()}, bound, writable,
      mounts.home);

  SandboxReport report = describe_launch(o, name, hostname_for(name), who, view, own_hidden, rlimits, degraded, audit_db);
  if (o.ca_dir || !running_proxy_ca.empty())
    report.trust = std::string("the host's roots and the netbox CA (") +
                   (o.ca_dir ? "--ca-dir " + o.ca_dir->string() : std::string("the running proxy's")) + ") in " +
                   kSystemTrustBundle + ", read-only, and " + kAgentTrustFolder + "; the TLS clients' variables name them";
  if (cgroup_plan.version != CgroupVersion::none) {
    const CgroupLimits& l = cgroup_plan.limits;
    report.cgroup_backend = cgroup_plan.backend();
    report.cgroup_limits = {{"memory", l.memory_bytes ? l.memory_text : "unlimited"},
                            {"cpus", l.cpus ? l.cpus_text : "unlimited"},
                            {"pids", l.pids ? l.pids_text : "unlimited"}};
  }
  report.cgroup_plan_json = cgroup_plan.json();
  for (const auto& missing : cgroup_plan.missing)
    (cgroup_plan.allow_degraded ? report.degraded : report.warnings).push_back("cgroup: " + missing);
  if (o.explain) {
    std::cout << (o.explain_format == "json" ? render_report_json(report) + "\n" : render_report(report));
    return 0;
  }
  require_launcher_capabilities();
  // A launch whose proxy inspects gives the agent the netbox CA beside the host's roots
  // (agent_trust.hpp): read now, as root, so a CA or store that cannot be read stops here.
  AgentTrustFiles trust;
  if (o.ca_dir) {
    try {
      trust = agent_trust_files(tls::CertificateAuthority::load(*o.ca_dir).certificate_pem());
    } catch (const tls::CaError& e) {
      // Worded as the proxy words it (inspector.cpp): e.what() names the file.
      throw LaunchError(kExitUsage, "--ca-dir " + o.ca_dir->string() + ": " + e.what());
    }
  } else if (!running_proxy_ca.empty()) {
    trust = agent_trust_files(running_proxy_ca);
  }
  open_missing_standard_fds();
  ignore_job_control_and_sigpipe();

  const policy::Cidr pool_cidr{boost::asio::ip::address_v4(pool->address), static_cast<unsigned>(pool->prefix)};
  // The log file is the launcher's (O_CLOEXEC, and the child closes every descriptor
  // above 2): the agent can neither read nor truncate what the proxy says about it.
  // Declared before the link, so it is closed only after the proxy is gone.
  int log_fd = -1;
  ScopeExit close_log([&] {
    if (log_fd >= 0) ::close(log_fd);
  });
  if (o.log_file) {
    log_fd = ::open(o.log_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log_fd < 0) throw LaunchError(kExitUsage, "--log-file " + *o.log_file + ": " + std::strerror(errno));
  }
  // Every line of the embedded proxy to --log-file, only refusals to the terminal (none
  // with --quiet), the requests counted for the summary; see proxy_log_relay.hpp.
  ProxyLogRelay relay(log_fd, o.quiet);
  EmbeddedLog log{.fd = relay.write_fd(), .all_requests = true, .quiet = false, .json = true};
  std::unique_ptr<ProxyLink> link = o.proxy_control ? make_control_client(*o.proxy_control)
                                                      : make_embedded_proxy(*policy, o.audit_db, pool_cidr, log, {o.ca_dir, o.upstream_ca});

  // Before any thread exists (the embedded proxy's come later), so that only the
  // supervisor ever sees these signals.
  block_supervised_signals();
  // The proxy, embedded or running, reaches the agent through sockets made in its namespace
  // (agent_link.hpp): no veth, no host rules; the lease holds the agent's uid and numbers
  // its cgroup and, with a running proxy, its synthetic pools.
  LaunchNetwork network(allocate_lease(*pool, o.state_dir, getpid(), who.own_uid), false);
  const Lease& lease = network.lease();
  // Made and limited before the child exists: a limit that cannot be had stops here.
  // Removed (whatever is left in it killed) on every path after the child is reaped.
  AgentCgroup cgroup(cgroup_plan, "netbox-" + lease.veth + "-" + std::to_string(getpid()), o.state_dir);

  ChildSpec spec;
  spec.host_addr = kLinkProxyAddress;
  spec.command = o.command;
  spec.user = user;
  spec.launcher_env = launcher_env;
  // The secrets stay with the launcher: its variables are gone from what the child
  // copies and from its own environment block; the agent holds placeholders.
  for (const auto& v : credentials.secret_variables) spec.launcher_env.erase(v);
  scrub_launcher_environment(credentials.secret_variables);
  spec.placeholders = credentials.placeholders;
  spec.keep_env = o.keep_env;
  spec.set_env = o.env;
  spec.rlimits = rlimits;
  spec.seccomp = seccomp.compile();
  spec.hostname = hostname_for(name);
  spec.mounts = mounts;
  // A user whose home is not shown (nobody's /nonexistent, a system folder) gets the
  // agent's own fresh /tmp as HOME: programs that write ~/.cache or ~/.config work.
  if (spec.mounts.home.empty()) spec.user.home = "/tmp";
  spec.mounts.trust = std::move(trust);
  if (lease.uid) {
    // The uid of its own this launch leased; its HOME tmpfs is its own too.
    use_launch_uid(spec.user, *lease.uid);
    if (spec.mounts.home_uid == user.uid) spec.mounts.home_uid = spec.mounts.home_gid = *lease.uid;
    report.user = describe_launch_uid(who, *lease.uid);
  }
  spec.dns_view = dns_view;
  if (dns_view)
    spec.mounts.resolv_conf = "# netbox: the DNS view of this agent's policy (netbox launch --network transparent).\n"
                              "# Allowed names resolve to synthetic addresses; denied names do not exist.\n"
                              "nameserver " + std::string(kLinkDnsAddress) +
                              "\noptions attempts:2 timeout:2\n";
  spec.cwd = agent_cwd;
  spec.commit_workdir = o.commit;
  spec.hidden = own_hidden;
  if (!o.quiet) std::cerr << render_banner(report) << std::flush;
  // Declared before the child: on an error the child is killed and reaped first, and
  // only then is what it wrote copied out.
  AgentStdio stdio = AgentStdio::open();
  spec.stdio = stdio.agent_fds();
  spec.controlling_terminal = stdio.controlling_terminal();
  // Cloned while the launcher is still single-threaded (see ConfinedChild::spawn).
  ConfinedChild child = ConfinedChild::spawn(spec);
  // Into the cgroup before it forks the agent (on release()): nothing escapes the limits.
  cgroup.start_attach(child.pid());
  stdio.start();

  // The proxy prepares on its own thread while the sockets are made (threads are fine
  // now that the child is cloned); joined before anything needs the proxy.
  std::jthread preparing([&link] { link->prepare(); });
  AgentLink sockets;
  try {
    sockets = AgentLink::make(child.pid(), dns_view);
  } catch (const std::runtime_error& e) {
    throw LaunchError(kExitLauncherFailure, e.what());
  }
  child.link_ready();

  preparing.join();

  AgentIdentity identity{name, profile, std::string(), std::string(kLinkProxyAddress), child.pid(),
                         command_line(o.command), policy ? policy->digest : std::string(), render_report_json(report),
                         std::nullopt, {}, {}, std::nullopt, {}, std::nullopt, {}};
  identity.sockets = sockets.sockets();
  // The embedded proxy has this agent only; a running one gets pools of its own per agent
  // (numbered by the lease, so launches at once propose different ones).
  if (dns_view) identity.dns_pool = o.proxy_control ? shared_proxy_pool(lease) : kSyntheticPool;
  if (dns_view)
    identity.dns_pool6 = o.proxy_control ? policy::Cidr::parse(ipv6_link_for(lease).synthetic_pool) : kSyntheticPool6;
  identity.credentials = std::move(credentials.secrets);
  identity.enforcer = guardian_enforcer(cgroup, child.pid());
  link->attach(identity);
  const ProxyPorts ports = sockets.ports();
  sockets = AgentLink();  // the proxy holds its own copies; nothing else keeps the namespace
  AgentOutcome failed;
  failed.exit_status = kExitLauncherFailure;
  ScopeExit detach_on_error([&] { link->detach(failed); });
  // The child hides netbox's files now that the proxy has them open; it forks the agent
  // only on release().
  child.send_ports(ports);
  cgroup.finish_attach();
  child.release();
  try {
    child.wait_for_exec();
  } catch (const LaunchError& e) {
    failed.exit_status = e.exit_code();
    throw;
  }
  child.hand_over();
  detach_on_error.dismiss();

  SuperviseOptions supervise_options;
  if (o.timeout_seconds)
    supervise_options.timeout = std::chrono::milliseconds(static_cast<long long>(*o.timeout_seconds * 1000));
  supervise_options.kill_grace = o.kill_grace;
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
    if (auto line = oom_report(usage, cgroup_plan.limits, outcome.exit_status); !line.empty())
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  // The agent is gone: its namespace is the kernel's to take down (nothing here waits for
  // that); its last output is copied and the proxy records the exit.
  stdio.finish();
  link->detach(outcome);
  link.reset();  // the embedded proxy's last lines are in the relay
  relay.finish();
  if (!o.quiet) {
    LaunchSummary summary{name, outcome.exit_status, outcome.timed_out,
                          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started),
                          std::nullopt, o.proxy_control ? own.proxy_audit_db : audit_db, o.mode};
    if (!o.proxy_control) {
      summary.allowed_refused = std::pair{relay.allowed(), relay.refused()};
      summary.reported = relay.reported();
    }
    std::cerr << render_summary(summary) << std::flush;
  }
  return outcome.timed_out ? kExitTimeout : outcome.exit_status;
}

}  // namespace netbox::launcher
