#include "netbox/launcher/launch_plan.hpp"

#include "netbox/launcher/agent_link.hpp"
#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/degraded_layers.hpp"
#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/filesystem_view.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/launch_report.hpp"
#include "netbox/launcher/policy_sandbox.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/seccomp_profile.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/audit/location.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/policy/load.hpp"
#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/enforceable_policy.hpp"

#include <cmath>
#include <cstdio>
#include <random>

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

std::string agent_name(const LaunchOptions& o) {
  if (o.name.empty()) return default_name(o.command.front());
  if (auto problem = proxy::agent_name_problem(o.name); !problem.empty()) throw LaunchError(kExitUsage, "--name " + problem);
  return o.name;
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

// The profile's sandbox (an agent's entry already holds the top level's keys it does not name).
const policy::SandboxSettings& sandbox_for(const policy::Policy& policy, const std::string& profile) {
  auto it = policy.agents.find(profile);
  return it == policy.agents.end() ? policy.base.sandbox : it->second.sandbox;
}

// --mode report: the profile the agent is decided with turns its refusals into reports
// (policy::Mode::report; decide.cpp keeps internal addresses refused in it).
void apply_mode(const LaunchPlan& p, policy::Policy& policy) {
  if (p.options.mode != "report") return;
  auto it = policy.agents.find(p.profile);
  (it == policy.agents.end() ? policy.base : it->second).mode = policy::Mode::report;
}

void check_mode(const LaunchPlan& p) {
  const LaunchOptions& o = p.options;
  if (o.mode != "enforce" && o.mode != "report")
    throw LaunchError(kExitUsage, "--mode '" + o.mode + "': expected enforce or report");
  // A running proxy decides with its own policy, where an agents entry sets "mode".
  if (o.mode == "report" && o.proxy_control)
    throw LaunchError(kExitUsage, "--mode report: only for the embedded proxy; a running proxy decides with its own "
                                  "policy: give the agent's entry \"mode\": \"report\" there (agents." +
                                      (p.profile.empty() ? p.name : p.profile) + ".mode)");
}

// The agent's working directory (--workdir or the policy's, else the launcher's own) is
// the agent's: a database there is the agent's to read and lock. The launcher hides the
// store's file from the agent and makes its folder: a server address has neither, so a
// launch writes to a file, or to a proxy that writes to the server (--proxy-control).
void check_audit_db(const LaunchOptions& o) {
  if (audit::is_postgresql(o.audit_db.string()))
    throw LaunchError(kExitUsage, "--audit-db postgresql://...: netbox launch writes its own audit to an SQLite file; to audit into "
                                      "PostgreSQL, run `netbox proxy --audit-db postgresql://... --control SOCKET` "
                                      "and launch with --proxy-control SOCKET");
  if (o.audit_db.empty() || o.proxy_control) return;  // the default location: made and checked by the embedded proxy
  try {
    const auto agent_dir = o.workdir ? std::filesystem::absolute(*o.workdir) : std::filesystem::current_path();
    audit::check_db_location(o.audit_db, "--audit-db", agent_dir);
  } catch (const std::exception& e) {
    throw LaunchError(kExitUsage, e.what());
  }
}

// The flags only the embedded proxy takes, and the values a flag must have.
void check_flags(const LaunchOptions& o) {
  validate_env_flags(o.env, o.keep_env);
  if (!parse_ipv4_network(o.subnet))
    throw LaunchError(kExitUsage, "--subnet '" + o.subnet + "': expected an IPv4 network such as 10.213.0.0/16");
  if (o.upstream_ca && !o.ca_dir) throw LaunchError(kExitUsage, "--upstream-ca needs --ca-dir DIR (TLS inspection)");
  if (o.proxy_control && o.ca_dir)
    throw LaunchError(kExitUsage, "--ca-dir: only for the embedded proxy; a running proxy inspects with its own --ca-dir");
  if (o.proxy_control && (o.log_file || o.quiet))
    throw LaunchError(kExitUsage, std::string(o.log_file ? "--log-file" : "--quiet") +
                                      ": only for the embedded proxy; a running proxy logs where it was started");
  if (o.network != "transparent" && o.network != "proxy-vars")
    throw LaunchError(kExitUsage, "--network '" + o.network + "': expected transparent or proxy-vars");
  if (o.timeout_seconds && (!std::isfinite(*o.timeout_seconds) || *o.timeout_seconds <= 0))
    throw LaunchError(kExitUsage, "--timeout: expected a positive number of seconds");
}

std::uint64_t tmp_bytes(const std::string& flag) {
  auto v = parse_size(flag);
  if (!v || *v == 0 || *v == RLIM_INFINITY)
    throw LaunchError(kExitUsage, "--tmp-size '" + flag + "': expected a size such as 256M or 1G");
  return *v;
}

std::string working_directory() {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  return ec ? std::string() : cwd.string();
}

// The embedded proxy's database, the one path every layer protects (not writable by
// --rw, hidden, warned about in the workdir); no --audit-db is the default location. A
// running proxy's own policy and store are its files, not this launch's: it names them.
void plan_own_files(LaunchPlan& p) {
  const LaunchOptions& o = p.options;
  if (!o.proxy_control)
    p.audit_db = o.audit_db.empty() ? audit::default_db_path() : std::filesystem::path(o.audit_db);
  p.own.audit_db = p.audit_db;
  p.own.policy = o.policy_file;
  p.own.control_socket = o.proxy_control;
  if (o.ca_dir) p.own.ca_key = *o.ca_dir / "ca.key";
  if (!o.proxy_control) return;
  const RunningProxyFiles proxy_files = running_proxy_files(*o.proxy_control);
  p.own.proxy_policy = proxy_files.policy;
  p.own.proxy_audit_db = proxy_files.audit_db;
  p.running_proxy_ca = proxy_files.ca_pem;
}

// The secrets of the profile's `credentials`, read now, before anything is created. A
// running proxy decides with its own policy: without --policy, the launcher reads the
// file that proxy names (the proxy checks the secrets against its profile again).
LaunchCredentials launch_credentials(const LaunchPlan& p, const std::map<std::string, std::string>& env) {
  std::optional<policy::Policy> served;
  if (!p.policy && p.options.proxy_control && p.own.proxy_policy) {
    try {
      // Read for its credentials only: no digest (the proxy records its own).
      served = policy::load_policy_file(*p.own.proxy_policy, policy::Digest::skipped);
    } catch (const std::exception& e) {
      throw LaunchError(kExitUsage, "the running proxy's policy " + p.own.proxy_policy->string() + ": " + e.what());
    }
  }
  const policy::Policy* policy = p.policy ? &*p.policy : served ? &*served : nullptr;
  if (!policy) return {};
  if (p.profile.empty()) return read_credentials(policy->base, "credentials", env);
  auto it = policy->agents.find(p.profile);
  if (it == policy->agents.end()) return {};  // the proxy refuses the profile itself
  return read_credentials(it->second, "agents." + p.profile + ".credentials", env);
}

// Reads the secrets and takes them out of `env` (the copy the child gets): no secret may
// reach the agent, not even copied by --env or --keep-env under another name.
void plan_credentials(LaunchPlan& p, std::map<std::string, std::string>& env) {
  p.credentials = launch_credentials(p, env);
  forget_secret_variables(env, p.credentials.secret_variables);
  if (p.credentials.secrets.empty()) return;
  const LaunchOptions& o = p.options;
  refuse_secrets_in(agent_environment({env, o.keep_env, o.env, {}, p.who.agent.name, p.who.agent.home, {},
                                       p.credentials.placeholders}),
                    p.credentials);
}

// The paths netbox keeps from the agent: its own files, unless the agent needs them to
// run (its working directory, HOME, a command named by its path) or a bind shows them.
HiddenPaths plan_hidden(const LaunchPlan& p, const AgentMounts& mounts, const std::string& agent_cwd) {
  std::vector<std::filesystem::path> bound, writable;
  for (const auto& b : mounts.binds) {
    if (b.pin) continue;
    bound.push_back(b.path);
    bound.push_back(b.source);
    if (b.writable) writable.push_back(b.source);
  }
  // A command named by its path keeps its folder visible (PATH lookups are in system folders).
  const std::string& command = p.options.command.front();
  return plan_hidden_paths(p.own,
                           {agent_cwd, p.who.agent.home, command.find('/') != std::string::npos ? command : std::string()},
                           bound, writable, mounts.home);
}

// The cgroup and the CA in the report: what describe_launch leaves to the launch.
void complete_report(LaunchPlan& p) {
  SandboxReport& report = p.report;
  const LaunchOptions& o = p.options;
  if (o.ca_dir || !p.running_proxy_ca.empty())
    report.trust = std::string("the host's roots and the netbox CA (") +
                   (o.ca_dir ? "--ca-dir " + o.ca_dir->string() : std::string("the running proxy's")) + ") in " +
                   kSystemTrustBundle + ", read-only, and " + kAgentTrustFolder + "; the TLS clients' variables name them";
  const CgroupPlan& cgroup = p.cgroup;
  if (cgroup.version != CgroupVersion::none) {
    const CgroupLimits& l = cgroup.limits;
    report.cgroup_backend = cgroup.backend();
    report.cgroup_limits = {{"memory", l.memory_bytes ? l.memory_text : "unlimited"},
                            {"cpus", l.cpus ? l.cpus_text : "unlimited"},
                            {"pids", l.pids ? l.pids_text : "unlimited"}};
  }
  report.cgroup_plan_json = cgroup.json();
  for (const auto& missing : cgroup.missing)
    (cgroup.allow_degraded ? report.degraded : report.warnings).push_back("cgroup: " + missing);
}

// The file-system view, the hidden paths, the limits and the report, and from them the
// child's spec (less what only the run has).
void plan_child(LaunchPlan& p, std::map<std::string, std::string> env) {
  const LaunchOptions& o = p.options;
  // With a pids limit on the agent's cgroup, that bounds the launch; RLIMIT_NPROC counts
  // every process of the agent's user on the machine, so it is lifted unless given.
  const auto rlimits = agent_rlimits(o.rlimits, p.cgroup.limits.pids && p.cgroup.parents.contains("pids"));
  const std::uint64_t tmp_size = tmp_bytes(o.tmp_size);
  const SeccompFilter seccomp = seccomp_filter_for(o.seccomp);
  DegradedLayers degraded(o.allow_degraded);
  const FilesystemRequest request = filesystem_request(o, p.who, p.audit_db, working_directory());
  const FilesystemView view = plan_filesystem_view(request, degraded);
  ChildSpec& c = p.child;
  c.mounts = view.mounts;
  c.mounts.tmp_bytes = tmp_size;
  c.cwd = view.workdir.empty() ? request.cwd : view.workdir;
  c.hidden = plan_hidden(p, c.mounts, c.cwd);
  c.hostname = p.name.substr(0, 64);  // the kernel takes at most 64 bytes
  p.report = describe_launch(o, p.name, c.hostname, p.who, view, c.hidden, rlimits, degraded, p.audit_db);
  complete_report(p);
  c.host_addr = kLinkProxyAddress;
  c.command = o.command;
  c.user = p.who.agent;
  // A user whose home is not shown (nobody's /nonexistent, a system folder) gets the
  // agent's own fresh /tmp as HOME: programs that write ~/.cache or ~/.config work.
  if (c.mounts.home.empty()) c.user.home = "/tmp";
  c.launcher_env = std::move(env);
  c.placeholders = p.credentials.placeholders;
  c.keep_env = o.keep_env;
  c.set_env = o.env;
  c.rlimits = rlimits;
  c.seccomp = seccomp.compile();
  c.dns_view = p.dns_view;
  if (p.dns_view)
    c.mounts.resolv_conf = "# netbox: the DNS view of this agent's policy (netbox launch --network transparent).\n"
                           "# Allowed names resolve to synthetic addresses; denied names do not exist.\n"
                           "nameserver " + std::string(kLinkDnsAddress) + "\noptions attempts:2 timeout:2\n";
  c.commit_workdir = o.commit;
}

}  // namespace

LaunchPlan plan_launch(const LaunchOptions& flags) {
  if (flags.command.empty())
    throw LaunchError(kExitUsage, "a command is required: netbox launch [OPTIONS] -- COMMAND [ARG...]");
  LaunchPlan p;
  // The policy first: its `sandbox` settings fill in the flags not given.
  p.policy = load_policy(flags);
  p.name = agent_name(flags);
  p.profile = profile_for(flags, p.policy, p.name);
  p.options = p.policy ? with_policy_sandbox(flags, sandbox_for(*p.policy, p.profile)) : flags;
  check_mode(p);
  if (p.policy) apply_mode(p, *p.policy);
  check_audit_db(p.options);
  check_flags(p.options);
  p.dns_view = p.options.network == "transparent";
  p.cgroup = describe_cgroup_plan(p.options);
  auto env = current_environment();
  p.who = choose_agent_user(p.options.user, env);
  plan_own_files(p);
  plan_credentials(p, env);
  plan_child(p, std::move(env));
  return p;
}

std::string render_plan(const LaunchPlan& plan) {
  return plan.options.explain_format == "json" ? render_report_json(plan.report) + "\n" : render_report(plan.report);
}

}  // namespace netbox::launcher
