// `netbox launch`: start an agent confined to its own network namespace, whose only
// way out is the netbox proxy (see docs/launch.md).
#include "commands.hpp"
#include "flag_table.hpp"
#include "launch_defaults.hpp"
#include "presets.hpp"

#include "netbox/audit/location.hpp"
#include "netbox/launcher/launch.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>
#include <vector>
#include <memory>
#include <optional>
#include <string>

namespace netbox::cli {

namespace {

struct LaunchArgs {
  launcher::LaunchOptions o;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> grace;
  std::optional<std::chrono::milliseconds> ask_timeout;
  std::optional<std::string> preset;
  bool learn = false;
};

// The policy, the proxy and the audit store.
void bind_proxy_flags(FlagTable& f, LaunchArgs& a) {
  auto& o = a.o;
  std::vector<std::string> preset_names;
  for (const auto& p : presets()) preset_names.emplace_back(p.name);
  f.option("--preset", a.preset,
           "Run a coding agent with its shipped settings: claude, codex, aider or gemini (its folders in HOME, its "
           "variables, its policy unless --policy)")
      ->check(CLI::IsMember(preset_names));
  f.option("--policy", o.policy_file, "Policy file for the embedded proxy (default: allow nothing, or the --preset's)");
  f.option("--agent,--name", o.name, "Agent name in the audit log (default: the command's name and a short id)");
  f.option("--profile", o.profile,
           "The policy's agents.PROFILE entry to decide with (default: the entry named like the agent, else the top level)");
  f.option("--mode", o.mode,
           "enforce (refuse what the policy refuses) or report (let it through and record it as `report`, to learn "
           "what the agent needs: `netbox policy suggest`); internal addresses and credential leaks stay refused")
      ->check(CLI::IsMember({"enforce", "report"}))
      ->default_str("enforce");
  f.flag("--learn", a.learn, "The same as --mode report");
  f.flag("--ask", o.ask,
         "Ask before refusing a host or port the policy does not list: on this terminal when the agent does not "
         "own it (o once, l for this launch, p add to the policy file, d deny), else from another terminal with "
         "`netbox agent pending` / `netbox agent approve NAME HOST`; unanswered questions are refused");
  f.duration("--ask-timeout", a.ask_timeout,
             "With --ask: how long a request waits for an answer before it is refused, a DURATION (default 60s)")
      ->default_str("60s");
  f.option("--control,--proxy-control", o.proxy_control,
           "Control socket of a running `netbox proxy --control PATH` to register with");
  f.option("--audit-db", o.audit_db,
           "Audit database of the embedded proxy (default: /var/lib/netbox/audit.db as root, else "
           "$XDG_STATE_HOME/netbox/audit.db); its directory must be writable by its owner only, and "
           "outside the working directory (the agent's)");
  f.option("--ca-dir", o.ca_dir,
           "The netbox CA's folder (`netbox ca init`) for the embedded proxy's TLS inspection (the hosts the "
           "policy's inspect names); hidden from the agent");
  f.option("--upstream-ca", o.upstream_ca,
           "A PEM file of extra trust anchors for inspected upstreams, beside the system store (needs --ca-dir)");
  f.option("--subnet", o.subnet, "IPv4 pool the agent's /30 comes from")->default_str(o.subnet);
}

// The agent's user, its file-system view and what the terminal shows.
void bind_view_flags(FlagTable& f, LaunchArgs& a) {
  auto& o = a.o;
  f.option("--user", o.user, "User the agent runs as (default: the sudo caller, else nobody)");
  f.option("--workdir", o.workdir, "Folder the agent may write to and starts in (default: the current directory)");
  f.option("--ro", o.ro, "Show PATH read-only, at the same path (repeatable)");
  f.option("--rw", o.rw, "Show PATH read-write, at the same path (repeatable)");
  f.option("--hide", o.hide, "Cover PATH with an empty folder or file (repeatable)");
  f.option("--workdir-quota", o.workdir_quota,
           "Write the workdir into an overlay on a tmpfs of SIZE; changes are discarded at exit unless --commit");
  f.flag("--commit", o.commit, "With --workdir-quota: copy the agent's changes onto the workdir when it exits");
  f.flag("--writable-hooks", o.writable_hooks,
         "Let the agent change what the host runs in writable folders: .git/hooks, .git/config, .git/info (also "
         "of submodules), .envrc, .direnv, .vscode (read-only by default)");
  f.option("--allow-degraded", o.allow_degraded,
           "Run even if LAYER (workdir, ro, rw, workdir-quota, cgroup) cannot be applied (repeatable)");
  f.flag("--explain", o.explain, "Print the layers the agent would run under, and run nothing");
  f.flag("-q,--quiet", o.quiet,
         "Nothing on the terminal but the agent's output (by default: the banner, the refused requests, a summary at exit)");
  f.option("--log-file", o.log_file,
           "Append every line of the embedded proxy (its lifecycle, every request) to FILE, created 0600");
  f.option("--format", o.explain_format, "With --explain: text (default) or json (what the agents row stores)")
      ->check(CLI::IsMember({"text", "json"}));
}

// The agent's environment, its limits and the command.
void bind_limit_flags(FlagTable& f, LaunchArgs& a) {
  auto& o = a.o;
  f.option("--env", o.env, "Set KEY=VALUE in the agent's environment (repeatable)");
  f.option("--keep-env", o.keep_env, "Pass the launcher's KEY on to the agent (repeatable)");
  f.duration("--timeout", a.timeout,
             "How long the agent may run before it gets SIGTERM (then SIGKILL): a DURATION such as 90 (seconds), "
             "30s, 15m or 1h30m; ending it so exits 124");
  f.duration("--kill-grace", a.grace, "Time between the timeout's SIGTERM and SIGKILL, a DURATION (500ms, 10s ...)")
      ->default_str("5s");
  f.option("--rlimit-as", o.rlimits.as, "Address-space limit, SIZE such as 4G or 512M (default 16G)");
  f.option("--rlimit-cpu", o.rlimits.cpu, "CPU time, a DURATION such as 90 (seconds), 30m or 1h30m (default unlimited)");
  f.option("--rlimit-nofile", o.rlimits.nofile, "Open files (default 4096)");
  f.option("--rlimit-nproc", o.rlimits.nproc,
           "Processes of the agent's user, counted across the whole machine (default 1024; --pids is the agent's own cap)");
  f.option("--rlimit-fsize", o.rlimits.fsize, "Largest file the agent may write, SIZE (default 16G)");
  // cgroup limits (Docker's names), enforced on the agent's whole process tree.
  f.option("--memory", o.cgroup.memory,
           "Memory limit of the agent's cgroup, SIZE such as 512M or 4G, swap off (default: half the RAM)");
  f.option("--cpus", o.cgroup.cpus, "CPUs the agent's cgroup may use, fractional, e.g. 0.5 (default: no limit)");
  f.option("--pids", o.cgroup.pids, "Processes and threads in the agent's cgroup (default 1024)");
  f.option("--tmp-size", o.tmp_size, "SIZE of the memory behind the agent's /tmp, /var/tmp and /dev/shm together")
      ->default_str("1G");
  f.option("--network", o.network,
           "transparent (the DNS view of the policy inside the namespace, and the proxy variables) or proxy-vars "
           "(only the variables)")
      ->type_name("TEXT:{transparent,proxy-vars}")
      ->default_str("transparent");
  f.option("--seccomp", o.seccomp, "default, off, or a Docker/OCI seccomp profile FILE")->default_str("default");
  f.option("command", o.command, "COMMAND [ARG...] (after --)")->required();
}

void bind(FlagTable& f, LaunchArgs& a) {
  bind_proxy_flags(f, a);
  bind_view_flags(f, a);
  bind_limit_flags(f, a);
}

// Where a command the agent could not find is on the host, and the flags that would show
// it: the host's PATH, then where installers put agents in the user's HOME.
std::string not_found_hint(const std::string& command, const InvokingUser& user) {
  if (command.find('/') != std::string::npos) return {};
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const auto colon = rest.find(':');
      dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  if (!user.home.empty())
    for (const char* d : {"/.local/bin", "/bin", "/.npm-global/bin", "/.cargo/bin", "/go/bin"}) dirs.push_back(user.home + d);
  for (const auto& dir : dirs) {
    std::error_code ec;
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / command;
    if (!std::filesystem::is_regular_file(candidate, ec) || ::access(candidate.c_str(), X_OK) != 0) continue;
    std::string hint = "; on the host it is " + candidate.string() + ", which the agent does not see: give --ro " + dir +
                       " --env PATH=" + dir + ":/usr/local/bin:/usr/bin:/bin";
    if (const Preset* p = find_preset(command)) hint += ", or --preset " + std::string(p->name);
    return hint;
  }
  return {};
}

int run_launch(LaunchArgs& a, FlagTable& flags) {
  auto& o = a.o;
  try {
    // The files' keys for the flags not given, then the preset's below them all.
    const InvokingUser user = invoking_user();
    apply_launch_files(flags, user);
    if (a.preset) apply_preset(*a.preset, user, o);
    if (a.learn) {
      if (flags.given("--mode") && o.mode != "report")
        throw UsageError("--learn is --mode report; " + flags.source("--mode") + " says " + o.mode);
      o.mode = "report";
    }
    o.tmp_size_given = flags.given("--tmp-size");
    o.network_given = flags.given("--network");
    if (a.timeout) o.timeout_seconds = static_cast<double>(a.timeout->count()) / 1000;
    if (a.grace) o.kill_grace = *a.grace;
    if (a.ask_timeout) {
      if (!o.ask) throw UsageError(flags.source("--ask-timeout") + " is given without --ask");
      if (a.ask_timeout->count() <= 0) throw UsageError("--ask-timeout must be longer than 0");
      o.ask_timeout = *a.ask_timeout;
    }
  } catch (const UsageError& e) {
    return usage_error(flags.command(), e.what());
  }
  try {
    return launcher::launch(o);
  } catch (const launcher::LaunchError& e) {
    const std::string hint = e.exit_code() == launcher::kExitNotFound ? not_found_hint(o.command.front(), invoking_user())
                                                                      : std::string();
    std::cerr << "netbox launch: " << e.what() << hint << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "netbox launch: " << e.what() << "\n";
    return launcher::kExitLauncherFailure;
  }
}

}  // namespace

void add_launch_command(CLI::App& app, int& rc) {
  auto* sub = app.add_subcommand("launch", "Run COMMAND confined to its own network namespace; its only way out is the proxy");
  auto cmd = std::make_shared<Bound<LaunchArgs>>(*sub);
  bind(cmd->flags, cmd->args);
  sub->positionals_at_end();
  sub->callback([cmd, &rc] { rc = run_launch(cmd->args, cmd->flags); });
}

}  // namespace netbox::cli
