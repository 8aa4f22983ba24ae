#include "netbox/launcher/cgroup.hpp"

#include "netbox/launcher/cgroup_backend.hpp"
#include "netbox/launcher/cgroup_discovery.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/subnet_pool.hpp"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <utility>

namespace netbox::launcher {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) { return read_cgroup_file(p).value_or(""); }

std::set<std::string> required_controllers(const CgroupLimits& l) {
  std::set<std::string> out;
  if (l.memory_bytes) out.insert("memory");
  if (l.cpus) out.insert("cpu");
  if (l.pids) out.insert("pids");
  return out;
}

std::string flag_for(const std::string& controller, const CgroupLimits& l) {
  if (controller == "memory") return "--memory " + l.memory_text;
  if (controller == "cpu") return "--cpus " + l.cpus_text;
  if (controller == "pids") return "--pids " + l.pids_text;
  return controller;
}

std::string flags_for(const std::set<std::string>& controllers, const CgroupLimits& l) {
  std::string out;
  for (const auto& c : controllers) out += (out.empty() ? "" : ", ") + flag_for(c, l);
  return out;
}

bool covers(const std::set<std::string>& have, const std::set<std::string>& wanted) {
  return std::includes(have.begin(), have.end(), wanted.begin(), wanted.end());
}

bool machine_has_swap() {
  std::istringstream in(slurp("/proc/meminfo"));
  for (std::string key, value, unit; in >> key >> value >> unit;)
    if (key == "SwapTotal:") return value != "0";
  return false;
}

fs::path records_dir(const fs::path& state_dir) { return state_dir / "cgroups"; }

bool owner_alive(const nlohmann::json& record) {
  const int pid = record.value("pid", 0);
  const auto start = record.value("start_time", 0ULL);
  return pid > 0 && start != 0 && process_start_time(pid) == start;
}

bool written_before(const fs::path& file, std::chrono::seconds age) {
  std::error_code ec;
  const auto when = fs::last_write_time(file, ec);
  return !ec && fs::file_time_type::clock::now() - when > age;
}

bool is_agent_cgroup_name(const std::string& name) { return name.starts_with("netbox-nbx"); }

// gc removes (and kills what is in) only folders of a cgroup file system, whatever a
// record under /run/netbox says.
bool on_cgroupfs(const fs::path& dir) {
  struct statfs st {};
  if (::statfs(dir.parent_path().c_str(), &st) != 0) return false;
  return st.f_type == CGROUP_SUPER_MAGIC || st.f_type == CGROUP2_SUPER_MAGIC;
}

}  // namespace

std::string CgroupPlan::backend() const {
  switch (version) {
    case CgroupVersion::v2: return "v2";
    case CgroupVersion::v1: return "v1";
    case CgroupVersion::none: break;
  }
  return "none";
}

std::vector<std::string> CgroupPlan::describe() const {
  std::vector<std::string> out;
  out.push_back("cgroup backend: " + backend());
  out.push_back(limits.memory_bytes ? "--memory " + limits.memory_text + " (" + std::to_string(*limits.memory_bytes) +
                                          " bytes, swap off)"
                                    : "--memory unlimited");
  out.push_back(limits.cpus ? "--cpus " + limits.cpus_text : "--cpus unlimited");
  out.push_back(limits.pids ? "--pids " + limits.pids_text : "--pids unlimited");
  for (const auto& [controller, dir] : parents) out.push_back(controller + " cgroup under " + dir.string());
  for (const auto& m : missing) out.push_back("missing: " + m + (allow_degraded ? " (accepted: --allow-degraded cgroup)" : ""));
  for (const auto& n : notes) out.push_back("note: " + n);
  return out;
}

std::string CgroupPlan::json() const {
  nlohmann::json j = {{"backend", backend()},
                      {"memory_bytes", nullptr},
                      {"cpus", nullptr},
                      {"pids", nullptr},
                      {"parents", nlohmann::json::object()},
                      {"missing", missing},
                      {"notes", notes},
                      {"allow_degraded", allow_degraded}};
  if (limits.memory_bytes) j["memory_bytes"] = *limits.memory_bytes;
  if (limits.cpus) j["cpus"] = *limits.cpus;
  if (limits.pids) j["pids"] = *limits.pids;
  for (const auto& [controller, dir] : parents) j["parents"][controller] = dir.string();
  return j.dump();
}

CgroupPlan plan_cgroup(const CgroupLimits& limits, bool allow_degraded, const std::string& proc_self_cgroup,
                       const std::string& mountinfo) {
  CgroupPlan plan;
  plan.limits = limits;
  plan.allow_degraded = allow_degraded;
  const auto required = required_controllers(limits);
  if (required.empty()) return plan;
  const auto entries = parse_proc_cgroup(proc_self_cgroup);
  const auto mounts = parse_cgroup_mounts(mountinfo);

  // v2 wherever it offers the controllers needed: in the launcher's own cgroup when
  // that is delegated (or the root), else in netbox.slice at the top. v1 (one hierarchy
  // per controller, cpu and cpuacct often together) where it offers more of them.
  std::set<std::string> v2_has;
  fs::path v2_parent;
  const auto mount = unified_mount(mounts);
  const auto own = own_cgroup_dir(entries, mounts, "");
  if (mount && own) {
    const bool delegated = covers(cgroup_v2::enabled(*own), required);
    v2_parent = delegated || *own == *mount ? *own : *mount / "netbox.slice";
    const auto offered = delegated ? cgroup_v2::enabled(*own) : cgroup_v2::controllers(*mount);
    std::set_intersection(required.begin(), required.end(), offered.begin(), offered.end(),
                          std::inserter(v2_has, v2_has.end()));
  }
  std::map<std::string, fs::path> v1_has;
  for (const auto& c : required) {
    std::error_code ec;
    if (auto dir = own_cgroup_dir(entries, mounts, c); dir && fs::is_directory(*dir, ec)) v1_has[c] = *dir;
  }
  const bool v2 = !v2_has.empty() && v2_has.size() >= v1_has.size();
  for (const auto& c : required)
    if (v2 ? !v2_has.contains(c) : !v1_has.contains(c))
      plan.missing.push_back(flag_for(c, limits) + ": this machine offers no " + c +
                             " cgroup controller (neither in cgroup v2 nor as a v1 hierarchy)");
  if (v2) {
    plan.version = CgroupVersion::v2;
    plan.unified_mount = *mount;
    plan.unified_own = *own;
    for (const auto& c : v2_has) plan.parents[c] = v2_parent;
    return plan;
  }
  plan.parents = v1_has;
  // CPU time is accounted by cpuacct, where mounted.
  if (auto dir = own_cgroup_dir(entries, mounts, "cpuacct")) plan.parents["cpuacct"] = *dir;
  // The guardian's freeze needs the freezer hierarchy, where mounted.
  if (auto dir = own_cgroup_dir(entries, mounts, "freezer")) plan.parents["freezer"] = *dir;
  if (!plan.parents.empty()) plan.version = CgroupVersion::v1;
  if (auto it = plan.parents.find("memory"); it != plan.parents.end()) {
    std::error_code ec;
    if (!fs::exists(it->second / "memory.memsw.limit_in_bytes", ec))
      plan.notes.push_back("this kernel does not account swap per cgroup (swapaccount=0): --memory limits RAM, "
                           "and swap is only discouraged (memory.swappiness 0)");
  }
  return plan;
}

CgroupPlan describe_cgroup_plan(const LaunchOptions& o) {
  const bool degraded = std::find(o.allow_degraded.begin(), o.allow_degraded.end(), "cgroup") != o.allow_degraded.end();
  return plan_cgroup(cgroup_limits(o.cgroup), degraded, slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo"));
}

std::string CgroupUsage::json() const {
  nlohmann::json j = nlohmann::json::object();
  if (memory_peak_bytes) j["memory_peak_bytes"] = *memory_peak_bytes;
  if (oom_kill) j["oom_kill"] = *oom_kill;
  if (cpu_usage_ms) j["cpu_usage_ms"] = *cpu_usage_ms;
  if (pids_peak) j["pids_peak"] = *pids_peak;
  return j.dump();
}

std::string oom_report(const CgroupUsage& usage, const CgroupLimits& limits, int exit_status) {
  if (!usage.oom_kill || *usage.oom_kill == 0) return {};
  const std::string flag = "--memory " + (limits.memory_bytes ? limits.memory_text : std::string("unlimited"));
  if (exit_status == 137) return "netbox launch: the agent was killed for running out of memory (" + flag + ")";
  return "netbox launch: " + std::to_string(*usage.oom_kill) + (*usage.oom_kill == 1 ? " process" : " processes") +
         " of the agent killed for running out of memory (" + flag + ")";
}

void AgentCgroup::fail(const CgroupPlan& plan, const std::string& why) {
  if (plan.allow_degraded) {
    std::cerr << "netbox launch: warning: " << why << "; running without it (--allow-degraded cgroup)\n";
    return;
  }
  std::string text = why + " (--allow-degraded cgroup runs the agent without it)";
  for (const auto& d : dirs_) remove_cgroup(d, version_);
  std::error_code ec;
  if (!record_.empty()) fs::remove(record_, ec);
  throw LaunchError(kExitLauncherFailure, text);
}

// The record comes first, so a launcher killed at any point leaves nothing gc cannot find.
void AgentCgroup::write_record(const CgroupPlan& plan, const std::string& name, const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(records_dir(state_dir), ec);
  record_ = records_dir(state_dir) / (name + ".json");
  nlohmann::json rec = {{"pid", ::getpid()},
                        {"start_time", process_start_time(::getpid())},
                        {"version", plan.backend()},
                        {"dirs", nlohmann::json::array()}};
  std::set<fs::path> planned;
  for (const auto& [c, parent] : plan.parents) planned.insert(parent / name);
  for (const auto& d : planned) rec["dirs"].push_back(d.string());
  // Written whole under another name, then renamed: a `netbox gc` running meanwhile
  // must never read a half-written record as an empty one and take this launch's
  // cgroup for nobody's.
  const fs::path partial = records_dir(state_dir) / ("." + name + ".partial");
  std::ofstream(partial) << rec.dump() << "\n";
  fs::rename(partial, record_, ec);
}

void AgentCgroup::make_v2(const CgroupPlan& plan, const std::string& name, const CgroupLimits& limits) {
  const auto required = required_controllers(limits);
  auto parent = cgroup_v2::prepare_parent(plan.unified_mount, plan.unified_own, required);
  if (!parent) {
    std::string names;
    for (const auto& c : required) names += (names.empty() ? "" : " ") + c;
    fail(plan, flags_for(required, limits) + ": cgroup v2 gives neither the launcher's cgroup " +
                   plan.unified_own.string() + " nor " + (plan.unified_mount / "netbox.slice").string() +
                   " the controllers " + names);
    version_ = CgroupVersion::none;
    return;
  }
  const fs::path dir = *parent / name;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    fail(plan, flags_for(required, limits) + ": cannot create the cgroup " + dir.string() + ": " + std::strerror(errno));
    version_ = CgroupVersion::none;
    return;
  }
  dirs_.push_back(dir);
  for (const auto& c : required) dir_for_[c] = dir;
  try {
    cgroup_v2::apply_limits(dir, limits);
  } catch (const std::exception& e) {
    fail(plan, e.what());
  }
}

void AgentCgroup::make_v1(const CgroupPlan& plan, const std::string& name, const CgroupLimits& limits) {
  for (const auto& [controller, parent] : plan.parents) {
    const fs::path dir = parent / name;
    // Co-mounted controllers (cpu,cpuacct) share one folder.
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) {
      if (::mkdir(dir.c_str(), 0755) != 0) {
        const int err = errno;
        if (controller != "cpuacct" && controller != "freezer")  // their absence limits nothing
          fail(plan, flag_for(controller, limits) + ": cannot create the cgroup " + dir.string() + ": " +
                         std::strerror(err));
        continue;
      }
      dirs_.push_back(dir);
    }
    dir_for_[controller] = dir;
  }
  try {
    if (!cgroup_v1::apply_limits(dir_for_, limits) && limits.memory_bytes && machine_has_swap())
      std::cerr << "netbox launch: note: this kernel does not account swap per cgroup (swapaccount=0): --memory "
                << limits.memory_text << " limits RAM, and swap is only discouraged\n";
  } catch (const std::exception& e) {
    fail(plan, e.what());
  }
}

AgentCgroup::AgentCgroup(const CgroupPlan& plan, const std::string& name, const fs::path& state_dir) {
  for (const auto& m : plan.missing) fail(plan, m);
  if (plan.version == CgroupVersion::none || plan.parents.empty()) return;
  write_record(plan, name, state_dir);
  version_ = plan.version;
  // Only what the plan has a controller for is written (the rest was accepted missing).
  CgroupLimits limits = plan.limits;
  if (!plan.parents.contains("memory")) limits.memory_bytes.reset();
  if (!plan.parents.contains("cpu")) limits.cpus.reset();
  if (!plan.parents.contains("pids")) limits.pids.reset();
  if (plan.version == CgroupVersion::v2)
    make_v2(plan, name, limits);
  else
    make_v1(plan, name, limits);
}

AgentCgroup::~AgentCgroup() {
  if (attaching_.joinable()) attaching_.join();
  // A frozen agent dies only once thawed (v1), whichever hierarchy is cleaned first.
  for (const auto& d : dirs_) thaw_cgroup(d);
  bool all_gone = true;
  for (const auto& d : dirs_) {
    auto error = remove_cgroup(d, version_);
    if (!error.empty()) {
      all_gone = false;
      std::cerr << "netbox launch: cleanup: " << error << " (netbox gc will retry)\n";
    }
  }
  std::error_code ec;
  if (all_gone && !record_.empty()) fs::remove(record_, ec);
}

void AgentCgroup::attach(pid_t pid) {
  for (const auto& d : dirs_) {
    try {
      attach_to_cgroup(d, pid);
    } catch (const std::exception& e) {
      throw LaunchError(kExitLauncherFailure, std::string("cannot move the agent into its cgroup: ") + e.what());
    }
  }
}

void AgentCgroup::start_attach(pid_t pid) {
  if (dirs_.empty()) return;
  try {
    attaching_ = std::thread([this, pid] {
      try {
        attach(pid);
      } catch (...) {
        attach_error_ = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    attach(pid);  // no thread to be had: here and now
  }
}

void AgentCgroup::finish_attach() {
  if (attaching_.joinable()) attaching_.join();
  if (attach_error_) std::rethrow_exception(std::exchange(attach_error_, nullptr));
}

CgroupUsage AgentCgroup::usage() const {
  if (version_ == CgroupVersion::v2 && !dirs_.empty()) return cgroup_v2::read_usage(dirs_.front());
  if (version_ == CgroupVersion::v1) return cgroup_v1::read_usage(dir_for_);
  return {};
}

void collect_cgroup_garbage(const fs::path& state_dir, std::vector<std::string>& removed) {
  auto remove_one = [&removed](const fs::path& dir, CgroupVersion version, const std::string& why) {
    std::error_code ec;
    if (!is_agent_cgroup_name(dir.filename().string()) || !fs::exists(dir, ec) || !on_cgroupfs(dir)) return true;
    if (!remove_cgroup(dir, version).empty()) return false;
    removed.push_back("cgroup " + dir.string() + why);
    return true;
  };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(records_dir(state_dir), ec)) {
    const bool partial = entry.path().extension() == ".partial";
    if (!partial && entry.path().extension() != ".json") continue;
    nlohmann::json rec;
    {
      std::ifstream in(entry.path());
      rec = nlohmann::json::parse(in, nullptr, false);
    }
    if (rec.is_object() && owner_alive(rec)) continue;
    if (partial) {
      // A record still being written is left alone; one whose launcher died before the
      // rename names no cgroup yet (the folders come after the record), so it is only
      // removed. Unreadable ones are given a minute: their writer may be mid-write.
      if (rec.is_object() || written_before(entry.path(), std::chrono::minutes(1))) fs::remove(entry.path(), ec);
      continue;
    }
    bool all_gone = true;
    if (rec.is_object() && rec.contains("dirs") && rec["dirs"].is_array()) {
      const auto version = rec.value("version", "") == "v2" ? CgroupVersion::v2 : CgroupVersion::v1;
      for (const auto& d : rec["dirs"])
        if (d.is_string() && is_agent_cgroup_name(fs::path(d.get<std::string>()).filename().string()))
          thaw_cgroup(d.get<std::string>());
      for (const auto& d : rec["dirs"])
        if (d.is_string())
          all_gone &= remove_one(d.get<std::string>(), version,
                                 " (launcher pid " + std::to_string(rec.value("pid", 0)) + " is gone)");
    }
    if (all_gone) fs::remove(entry.path(), ec);
  }

  // Agent cgroups with no record at all (the record is written before the folder, so
  // these belong to nobody), where this process would make its own.
  const auto entries = parse_proc_cgroup(slurp("/proc/self/cgroup"));
  const auto mounts = parse_cgroup_mounts(slurp("/proc/self/mountinfo"));
  std::vector<std::pair<fs::path, CgroupVersion>> parents;
  // The freezer first: a frozen agent's processes die only once it is thawed.
  for (const char* c : {"freezer", "memory", "cpu", "cpuacct", "pids"})
    if (auto d = own_cgroup_dir(entries, mounts, c)) parents.emplace_back(*d, CgroupVersion::v1);
  if (auto d = own_cgroup_dir(entries, mounts, "")) parents.emplace_back(*d, CgroupVersion::v2);
  if (auto m = unified_mount(mounts)) parents.emplace_back(*m / "netbox.slice", CgroupVersion::v2);
  for (const auto& [parent, version] : parents) {
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory(ec) || !is_agent_cgroup_name(name)) continue;
      const fs::path record = records_dir(state_dir) / (name + ".json");
      if (fs::exists(record, ec)) continue;  // a live launcher's (dead ones' were handled above)
      remove_one(entry.path(), version, " (no launcher)");
    }
  }
}

}  // namespace netbox::launcher
