// `netbox launch`: start an agent confined to its own network namespace, whose only
// way out is the netbox proxy (see docs/launch.md).
#include "commands.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/launcher/duration.hpp"
#include "netbox/launcher/launch.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace netbox::cli {

void add_launch_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("launch", "Run COMMAND confined to its own network namespace; its only way out is the proxy");
  auto o = std::make_shared<launcher::LaunchOptions>();
  auto policy = std::make_shared<std::string>();
  auto control = std::make_shared<std::string>();
  auto timeout = std::make_shared<std::string>();
  auto grace = std::make_shared<std::string>("5");
  auto rl = std::make_shared<std::array<std::string, 5>>();
  auto cg = std::make_shared<std::array<std::string, 3>>();  // --memory --cpus --pids

  sub->add_option("--policy", *policy, "Policy file for the embedded proxy (default: allow nothing)");
  sub->add_option("--agent,--name", o->name, "Agent name in the audit log (default: the command's name and a short id)");
  sub->add_option("--profile", o->profile, "The policy's agents.PROFILE entry to decide with (default: the entry named like the agent, else the top level)");
  sub->add_option("--control,--proxy-control", *control, "Control socket of a running `netbox proxy --control PATH` to register with");
  sub->add_option("--audit-db", o->audit_db,
                  "Audit database of the embedded proxy (default: /var/lib/netbox/audit.db as root, else "
                  "$XDG_STATE_HOME/netbox/audit.db); its directory must be writable by its owner only, and "
                  "outside the working directory (the agent's)");
  sub->add_option("--subnet", o->subnet, "IPv4 pool the agent's /30 comes from")->default_str(o->subnet);
  auto user = std::make_shared<std::string>();
  auto workdir = std::make_shared<std::string>();
  auto quota = std::make_shared<std::string>();
  auto* user_opt = sub->add_option("--user", *user, "User the agent runs as (default: the sudo caller, else nobody)");
  auto* workdir_opt = sub->add_option("--workdir", *workdir, "Folder the agent may write to and starts in (default: the current directory)");
  sub->add_option("--ro", o->ro, "Show PATH read-only, at the same path (repeatable)");
  sub->add_option("--rw", o->rw, "Show PATH read-write, at the same path (repeatable)");
  sub->add_option("--hide", o->hide, "Cover PATH with an empty folder or file (repeatable)");
  auto* quota_opt = sub->add_option("--workdir-quota", *quota, "Write the workdir into an overlay on a tmpfs of SIZE; changes are discarded at exit unless --commit");
  sub->add_flag("--commit", o->commit, "With --workdir-quota: copy the agent's changes onto the workdir when it exits");
  sub->add_option("--allow-degraded", o->allow_degraded, "Run even if LAYER (workdir, ro, rw, workdir-quota, cgroup) cannot be applied (repeatable)");
  sub->add_flag("--explain", o->explain, "Print the layers the agent would run under, and run nothing");
  sub->add_flag("-q,--quiet", o->quiet, "No proxy log lines on stderr (by default: the refused and failed requests)");
  sub->add_option("--log-file", o->log_file,
                  "Append every proxy log line (allowed requests too) to FILE, created 0600, instead of stderr");
  sub->add_option("--format", o->explain_format, "With --explain: text (default) or json (what the agents row stores)")
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--env", o->env, "Set KEY=VALUE in the agent's environment (repeatable)");
  sub->add_option("--keep-env", o->keep_env, "Pass the launcher's KEY on to the agent (repeatable)");
  auto* timeout_opt = sub->add_option("--timeout", *timeout,
                                      "How long the agent may run before it gets SIGTERM (then SIGKILL): seconds, or "
                                      "30s, 15m, 1h ...; ending it so exits 124");
  sub->add_option("--kill-grace", *grace, "Time between the timeout's SIGTERM and SIGKILL (seconds, or 500ms, 10s ...)")
      ->default_str("5");
  sub->add_option("--rlimit-as", (*rl)[0], "Address-space limit, SIZE such as 4G or 512M (default 16G)");
  sub->add_option("--rlimit-cpu", (*rl)[1], "CPU seconds (default unlimited)");
  sub->add_option("--rlimit-nofile", (*rl)[2], "Open files (default 4096)");
  sub->add_option("--rlimit-nproc", (*rl)[3], "Processes of the agent's user, counted across the whole machine (default 1024; --pids is the agent's own cap)");
  sub->add_option("--rlimit-fsize", (*rl)[4], "Largest file the agent may write, SIZE (default 16G)");
  // cgroup limits (Docker's names), enforced on the agent's whole process tree.
  sub->add_option("--memory", (*cg)[0], "Memory limit of the agent's cgroup, SIZE such as 512M or 4G, swap off (default: half the RAM)");
  sub->add_option("--cpus", (*cg)[1], "CPUs the agent's cgroup may use, fractional, e.g. 0.5 (default: no limit)");
  sub->add_option("--pids", (*cg)[2], "Processes and threads in the agent's cgroup (default 1024)");
  sub->add_option("--tmp-size", o->tmp_size, "SIZE of the memory behind the agent's /tmp, /var/tmp and /dev/shm together")->default_str("1G");
  sub->add_option("--seccomp", o->seccomp, "default, off, or a Docker/OCI seccomp profile FILE")->default_str("default");
  sub->add_option("command", o->command, "COMMAND [ARG...] (after --)")->required();
  sub->positionals_at_end();

  sub->callback([&rc, sub, o, policy, control, timeout, timeout_opt, grace, rl, cg, user, user_opt, workdir,
                 workdir_opt, quota, quota_opt] {
    if (!policy->empty()) o->policy_file = *policy;
    if (user_opt->count() > 0) o->user = *user;
    if (workdir_opt->count() > 0) o->workdir = *workdir;
    if (quota_opt->count() > 0) o->workdir_quota = *quota;
    o->tmp_size_given = sub->get_option("--tmp-size")->count() > 0;
    if (!control->empty()) o->proxy_control = *control;
    const auto seconds = [&](const char* flag, const std::string& text) {
      const auto s = launcher::parse_seconds(text);
      if (!s) {
        std::cerr << "netbox launch: " << flag << " '" << text
                  << "': expected seconds or a duration such as 500ms, 30s, 15m, 1h\n";
        rc = launcher::kExitUsage;
      }
      return s;
    };
    if (timeout_opt->count() > 0) {
      const auto t = seconds("--timeout", *timeout);
      if (!t) return;
      o->timeout_seconds = *t;
    }
    const auto g = seconds("--kill-grace", *grace);
    if (!g) return;
    o->kill_grace = std::chrono::milliseconds(static_cast<long long>(*g * 1000));
    auto set = [&](const char* flag, std::optional<std::string>& field, const std::string& value) {
      if (sub->get_option(flag)->count() > 0) field = value;
    };
    set("--rlimit-as", o->rlimits.as, (*rl)[0]);
    set("--rlimit-cpu", o->rlimits.cpu, (*rl)[1]);
    set("--rlimit-nofile", o->rlimits.nofile, (*rl)[2]);
    set("--rlimit-nproc", o->rlimits.nproc, (*rl)[3]);
    set("--rlimit-fsize", o->rlimits.fsize, (*rl)[4]);
    set("--memory", o->cgroup.memory, (*cg)[0]);
    set("--cpus", o->cgroup.cpus, (*cg)[1]);
    set("--pids", o->cgroup.pids, (*cg)[2]);
    try {
      rc = launcher::launch(*o);
    } catch (const launcher::LaunchError& e) {
      std::cerr << "netbox launch: " << e.what() << "\n";
      rc = e.exit_code();
    } catch (const std::exception& e) {
      std::cerr << "netbox launch: " << e.what() << "\n";
      rc = launcher::kExitLauncherFailure;
    }
  });
}

}  // namespace netbox::cli
