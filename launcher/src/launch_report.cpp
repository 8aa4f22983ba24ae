#include "netbox/launcher/launch_report.hpp"

#include <sys/resource.h>

namespace netbox::launcher {
namespace {

std::string describe_user(const AgentUserChoice& who) {
  if (who.own_uid) return who.agent.name + ": " + who.why;  // its uid is leased at launch (describe_launch_uid)
  return who.agent.name + " (uid " + std::to_string(who.agent.uid) + ", gid " + std::to_string(who.agent.gid) +
         "): " + who.why;
}

std::string describe_rlimits(const std::vector<RlimitSetting>& limits) {
  std::string out;
  for (const auto& l : limits) {
    const std::string v = l.value == RLIM_INFINITY ? "unlimited" : std::to_string(l.value);
    out += (out.empty() ? "" : ", ") + std::string(l.name) + " " + v;
  }
  return out;
}

// The filesystem part of the report; the rest is filled where it is decided.
void describe_view(SandboxReport& r, const FilesystemView& view, const AgentUserChoice& who, const std::string& tmp_size,
                   const std::optional<std::string>& o_quota, bool commit) {
  r.workdir = view.workdir;
  if (view.workdir_quota > 0)
    r.workdir_mode = std::string("overlay, upper layer a tmpfs of ") + (o_quota ? *o_quota : "") +
                     (commit ? "; changes copied back at exit (--commit)" : "; changes discarded at exit");
  r.no_workdir_reason = view.no_workdir_reason;
  for (const auto& b : view.mounts.binds) {
    if (b.pin) continue;  // the agent's own view, bound onto itself
    const std::string shown = b.path + (b.source == b.path ? "" : " (" + b.source + ")") +
                              (b.note.empty() ? "" : " (" + b.note + ")");
    const auto denied = view.agent_cannot_write.find(b.path);
    if (!b.writable || denied == view.agent_cannot_write.end()) {
      (b.writable ? r.writable : r.read_only).push_back(shown);
      continue;
    }
    // Mounted read-write, but the host's owner and mode keep the agent's user out: say so.
    r.not_writable.push_back(shown + " (" + denied->second + ")");
    // A uid of the launch's own is leased only when it runs: no number to name yet (the
    // probe asked as the range's first uid; a folder an earlier agent made under another
    // uid of the range can answer otherwise for the leased one, which is not asked yet).
    const std::string user = who.own_uid ? who.agent.name + " (a uid of its own for this launch)"
                                         : who.agent.name + " (uid " + std::to_string(who.agent.uid) + ")";
    r.warnings.push_back("the agent's user " + user + " cannot write " +
                         b.path + " (" + denied->second + "): give --user NAME of a user who can, or change its "
                         "owner or mode");
  }
  if (!r.workdir.empty() && view.agent_cannot_write.contains(r.workdir)) r.workdir_writable = false;
  r.warnings.insert(r.warnings.end(), view.warnings.begin(), view.warnings.end());
  r.memory = "/tmp, /var/tmp, /dev/shm" + std::string(view.mounts.home.empty() ? "" : ", " + view.mounts.home) +
             ": one tmpfs of " + tmp_size + ", private, gone at exit";
  r.hidden = view.mounts.hidden;
}

void describe_own_files(SandboxReport& r, const HiddenPaths& own) {
  for (const auto& f : own.folders) r.hidden.push_back(f + " (netbox)");
  for (const auto& s : own.shared)
    for (const auto& name : s.hidden_names)
      r.hidden.push_back(s.folder + "/" + name + " (netbox; " + s.folder + " shown without it)");
  for (const auto& f : own.files) r.hidden.push_back(f + " (netbox)");
}

}  // namespace

SandboxReport describe_launch(const LaunchOptions& o, const std::string& name, const std::string& hostname,
                              const AgentUserChoice& who, const FilesystemView& view, const HiddenPaths& own_hidden,
                              const std::vector<RlimitSetting>& rlimits, const DegradedLayers& degraded,
                              const std::optional<std::filesystem::path>& audit_db) {
  SandboxReport r;
  r.name = name;
  r.mode = o.mode;
  r.user = describe_user(who);
  r.network = "own namespace; its only route is the proxy (" +
              (o.proxy_control ? "running, control " + o.proxy_control->string()
                               : "embedded, policy " + (o.policy_file   ? o.policy_file->string()
                                                        : o.policy_text ? o.policy_text->first
                                                                        : "deny all") +
                                     ", audit " + (audit_db ? audit_db->string() : std::string("the default"))) +
              ")" +
              (o.network == "transparent"
                   ? "; DNS answered from the policy, every TCP connection captured (--network transparent)"
                   : "; only the proxy variables (--network proxy-vars)");
  r.ipc_uts = "own IPC and UTS namespaces (hostname " + hostname + ")";
  describe_view(r, view, who, o.tmp_size, o.workdir_quota, o.commit);
  describe_own_files(r, own_hidden);
  r.seccomp = o.seccomp;
  r.rlimits = describe_rlimits(rlimits);
  r.env_kept = {"PATH", "LANG", "LC_*", "TERM", "TZ"};
  r.env_kept.insert(r.env_kept.end(), o.keep_env.begin(), o.keep_env.end());
  r.degraded = degraded.notes();
  if (audit_db) {
    const auto folder = std::filesystem::weakly_canonical(std::filesystem::absolute(*audit_db)).parent_path();
    for (const auto& b : view.mounts.binds)
      if (b.writable && (folder == b.source || folder.string().starts_with(b.source + "/")))
        r.warnings.push_back("the audit database " + audit_db->string() + " is in the writable " + b.source +
                             ": its files are covered, but the agent may add files next to them; "
                             "give --audit-db a path outside");
  }
  return r;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string::npos)
    return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

// "850ms", "12s", "1m12s", "2h3m": the one duration grammar, as netbox reads it.
std::string duration_text(std::chrono::milliseconds d) {
  const long long ms = d.count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  const long long s = ms / 1000, h = s / 3600, m = s % 3600 / 60, sec = s % 60;
  if (h > 0) return std::to_string(h) + "h" + std::to_string(m) + "m";
  if (m > 0) return std::to_string(m) + "m" + std::to_string(sec) + "s";
  return std::to_string(sec) + "s";
}

}  // namespace

std::string render_summary(const LaunchSummary& s) {
  std::string line = "netbox launch: " + s.name + " " +
                     (s.timed_out ? std::string("timed out") : "exited " + std::to_string(s.exit_status)) + " after " +
                     duration_text(s.duration) + "; ";
  if (s.mode == "report") line += "report mode: ";
  if (s.allowed_refused)
    line += std::to_string(s.allowed_refused->first) + " requests allowed, " +
            (s.mode == "report" ? std::to_string(s.reported) + " reported (enforce mode would refuse them), " : "") +
            std::to_string(s.allowed_refused->second) + " refused: ";
  else
    line += "its requests: ";
  line += "netbox audit" + (s.audit_db ? " --db " + shell_quote(s.audit_db->string()) : std::string()) + " --agent " +
          shell_quote(s.name);
  return line + "\n";
}

}  // namespace netbox::launcher
