#include "netbox/launcher/sandbox_report.hpp"

#include <nlohmann/json.hpp>

namespace netbox::launcher {
namespace {

std::string joined(const std::vector<std::string>& items, const char* none) {
  if (items.empty()) return none;
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string workdir_text(const SandboxReport& r) {
  if (r.workdir.empty()) return "none (" + r.no_workdir_reason + ")";
  return r.workdir + (r.workdir_writable ? " (read-write" : " (read-write mount, NOT writable by the agent's user") +
         (r.workdir_mode.empty() ? "" : ", " + r.workdir_mode) + "; the agent starts here)";
}

}  // namespace

std::string render_report(const SandboxReport& r) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) { out += std::string(key) + ": " + value + "\n"; };
  line("agent", r.name);
  line("mode", r.mode == "report" ? "report: the policy's refusals are let through and recorded as report "
                                    "(internal addresses, netbox's endpoints, domain fronting and credential leaks "
                                    "stay refused)"
                                  : r.mode);
  line("user", r.user);
  line("network", r.network);
  line("pid", r.pid);
  line("ipc, uts", r.ipc_uts);
  line("root", r.root);
  line("workdir", workdir_text(r));
  line("writable", joined(r.writable, "nothing on the host"));
  if (!r.not_writable.empty()) line("not writable by the agent's user", joined(r.not_writable, ""));
  line("read-only binds", joined(r.read_only, "none"));
  line("memory", r.memory);
  line("hidden", joined(r.hidden, "none"));
  line("dev", "null, zero, full, random, urandom, tty, ptmx (own devpts), shm, fd links; read-only");
  line("proc", "own; /proc/sys, sysrq-trigger, irq, bus read-only; kcore, keys, timer_list, sched_debug masked");
  line("sys", "read-only, of the agent's network namespace");
  line("seccomp", r.seccomp);
  line("rlimits", r.rlimits);
  std::string cgroup = "none";
  if (!r.cgroup_backend.empty()) {
    cgroup = r.cgroup_backend;
    for (const auto& [k, v] : r.cgroup_limits) cgroup += ", " + k + " " + v;
  }
  line("cgroup", cgroup);
  line("env kept", joined(r.env_kept, "none"));
  line("trust", r.trust);
  line("degraded", joined(r.degraded, "none"));
  for (const auto& w : r.warnings) line("warning", w);
  return out;
}

std::string render_report_json(const SandboxReport& r) {
  nlohmann::json cgroup = nullptr;
  if (!r.cgroup_plan_json.empty()) cgroup = nlohmann::json::parse(r.cgroup_plan_json);
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& [k, v] : r.cgroup_limits) limits[k] = v;
  nlohmann::json j = {{"agent", r.name},
                      {"mode", r.mode},
                      {"user", r.user},
                      {"network", r.network},
                      {"pid", r.pid},
                      {"ipc_uts", r.ipc_uts},
                      {"root", r.root},
                      {"workdir", r.workdir.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.workdir)},
                      {"workdir_mode", r.workdir_mode},
                      {"no_workdir_reason", r.no_workdir_reason},
                      {"workdir_writable", r.workdir_writable},
                      {"writable", r.writable},
                      {"not_writable", r.not_writable},
                      {"read_only", r.read_only},
                      {"memory", r.memory},
                      {"hidden", r.hidden},
                      {"seccomp", r.seccomp},
                      {"rlimits", r.rlimits},
                      {"cgroup_backend", r.cgroup_backend},
                      {"cgroup_limits", limits},
                      {"cgroup", cgroup},
                      {"env_kept", r.env_kept},
                      {"trust", r.trust},
                      {"degraded", r.degraded},
                      {"warnings", r.warnings}};
  // Paths and names are the host's and may hold any byte: never throw on invalid UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_banner(const SandboxReport& r) {
  std::string out = "netbox launch: " + r.name + " runs as " + r.user + "; workdir " +
                    (r.workdir.empty() ? "none" : r.workdir) + (r.workdir_mode.empty() ? "" : " (overlay)") +
                    (r.workdir_writable ? "" : " (NOT writable by the agent's user)") + "; read-only root, " +
                    std::to_string(r.writable.size()) + " writable, " + std::to_string(r.read_only.size()) +
                    " read-only, " + std::to_string(r.hidden.size()) + " hidden paths; network via proxy; seccomp " +
                    r.seccomp;
  if (!r.cgroup_backend.empty()) out += "; cgroup " + r.cgroup_backend;
  if (r.mode == "report") out += "; REPORT MODE: the policy's refusals are recorded, not enforced";
  if (!r.degraded.empty()) out += "; DEGRADED: " + joined(r.degraded, "");
  out += "\n";
  for (const auto& w : r.warnings) out += "netbox launch: warning: " + w + "\n";
  return out;
}

}  // namespace netbox::launcher
