#include "netbox/launcher/filesystem_view.hpp"

#include "netbox/launcher/agent_access.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/rlimits.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <optional>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;

fs::path canonical_path(fs::path p, const std::string& cwd) {
  if (p.is_relative()) p = fs::path(cwd.empty() ? "/" : cwd) / p;
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  if (ec) c = p.lexically_normal();
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Where a path given by the user is shown: its folder resolved, its last component as
// given. A dotfile that is a symlink (~/.gitconfig -> dotfiles/gitconfig) is then shown
// under its own name in an empty HOME, with its target's content.
fs::path placed_path(const fs::path& canonical, fs::path given, const std::string& cwd) {
  if (given.is_relative()) given = fs::path(cwd.empty() ? "/" : cwd) / given;
  std::string s = given.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const fs::path lexical = s;
  if (!lexical.has_parent_path() || lexical == "/" || lexical.filename() == "..") return canonical;
  return canonical_path(lexical.parent_path(), "/") / lexical.filename();
}

fs::path resolve(const char* flag, const std::string& value, const std::string& cwd) {
  if (value.empty()) throw LaunchError(kExitUsage, std::string(flag) + " '': expected a path");
  return canonical_path(value, cwd);
}

bool within(const fs::path& p, const fs::path& base) {
  if (base == "/") return true;
  auto rel = p.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

std::string first_component(const fs::path& p) {
  auto it = p.begin();
  if (it == p.end() || ++it == p.end()) return {};
  return it->string();
}

// The agent has its own of these; a bind from the host would show the host's.
std::string kernel_folder(const fs::path& p) {
  for (const char* k : {"/proc", "/sys", "/dev"})
    if (within(p, k)) return k;
  return {};
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool overlay_supported() {
  std::ifstream in("/proc/filesystems");
  for (std::string line; std::getline(in, line);)
    if (line.ends_with("\toverlay")) return true;
  return false;
}

std::uint64_t workdir_quota_bytes(const std::string& flag) {
  auto v = parse_size(flag);
  if (!v || *v == 0 || *v == RLIM_INFINITY)
    throw LaunchError(kExitUsage, "--workdir-quota '" + flag + "': expected a size such as 256M or 1G");
  return *v;
}

// What a folder is when it is one no agent should write by accident (issue 22, 13):
// shared with every user of the machine, or a home whose dotfiles the host runs.
// Empty: none of those.
std::string shared_folder(const fs::path& folder, const std::vector<std::string>& homes) {
  if (folder == "/") return "the host's root";
  for (const char* shared : {"/tmp", "/var/tmp", "/dev/shm"})
    if (folder == canonical_path(shared, "/"))
      return std::string(shared) + ", shared with every user of this machine (the agent would see and write their files)";
  for (const auto& h : homes)
    if (!h.empty() && folder == canonical_path(h, "/"))
      return "the home folder " + h + " (the agent could change .bashrc, ~/.local/bin and whatever else runs on the host)";
  return {};
}

bool is_real_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(p, ec));
}

// core.hooksPath of a git config file, as written (relative to the work tree), when set.
std::optional<fs::path> hooks_path(const fs::path& config) {
  std::ifstream in(config);
  std::string line;
  bool core = false;
  std::optional<fs::path> found;
  auto lower = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  auto trim = [](std::string t) {
    const auto b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      core = lower(trim(line.substr(1, line.find(']') - 1))) == "core";
      continue;
    }
    const auto eq = line.find('=');
    if (!core || eq == std::string::npos || lower(trim(line.substr(0, eq))) != "hookspath") continue;
    std::string value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (!value.empty()) found = fs::path(value);  // the last one wins, as for git
  }
  return found;
}

// Files of a writable folder that the host runs on its own when a developer works there
// (issue 22, 14): git's hooks, config and attributes (which name filters and diff
// drivers) of the repository and of every submodule's git folder, direnv's .envrc and
// .direnv, VS Code's workspace settings and tasks. `git diff` shows none of them. Each is
// bound read-only; a git folder is pinned first so that it cannot be swapped whole;
// hooks/ and info/ are made when missing so that no hook can be created.
//
// Each must resolve inside the writable folder. An earlier agent can leave a symlink
// there (.vscode -> /run/user/1000, .git/modules/x/info -> /root, a hooksPath through
// one): bound at its target, it would put that host path into this launch's view, and a
// missing folder would be made there by root. Such a launch is refused, naming the link.
void protect_host_executed(const fs::path& shown, const fs::path& source, std::vector<BindMount>& binds,
                           std::vector<std::string>& git_folders_without_commondir) {
  const std::string note = "run by the host's git, direnv or editor; --writable-hooks lets the agent change it";
  auto read_only = [&](const fs::path& rel, bool make) {
    if (!make && !path_exists(source / rel)) return;
    // A symlink inside the folder (a shared hooks folder of the project) is bound at its
    // target, as --ro binds are.
    const fs::path target = canonical_path(source / rel, "/");
    if (!within(target, source))
      throw LaunchError(kExitUsage, (source / rel).string() + " leads to " + target.string() + ", outside " +
                                        source.string() + " (a symbolic link on the way): netbox binds it read-only "
                                        "to keep the agent from changing what the host's git, direnv or editor "
                                        "runs, and that would show the host's " + target.string() +
                                        " to the agent. An agent may have left the link: remove it, or pass "
                                        "--writable-hooks to protect none of these files");
    binds.push_back({(shown / rel).string(), target.string(), false, 0, false, make, note, source.string()});
  };
  std::function<void(const fs::path&, int)> git_folder = [&](const fs::path& rel, int depth) {
    binds.push_back({(shown / rel).string(), (shown / rel).string(), true, 0, true, false, {}});
    read_only(rel / "config", false);
    read_only(rel / "config.worktree", false);
    // Where git takes config and hooks from instead (a linked worktree's git folder).
    read_only(rel / "commondir", false);
    read_only(rel / "hooks", true);
    read_only(rel / "info", true);
    // A linked worktree's git folder (.git/worktrees/NAME): git there reads commondir and
    // config.worktree too.
    std::error_code wec;
    if (depth == 0 && is_real_dir(source / rel / "worktrees"))
      for (fs::directory_iterator it(source / rel / "worktrees", wec), end; !wec && it != end; it.increment(wec))
        if (!it->is_symlink() && it->is_directory()) {
          read_only(it->path().lexically_relative(source) / "commondir", false);
          read_only(it->path().lexically_relative(source) / "config.worktree", false);
        }
    // A submodule's git folder is .git/modules/NAME (NAME may hold slashes), nested ones
    // below it again: every folder there with a HEAD is one.
    if (depth > 4 || !is_real_dir(source / rel / "modules")) return;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(source / rel / "modules", ec), end; !ec && it != end; it.increment(ec)) {
      if (it.depth() > 4 || !it->is_directory() || it->is_symlink()) {
        it.disable_recursion_pending();
        continue;
      }
      if (!path_exists(it->path() / "HEAD")) continue;
      git_folder(it->path().lexically_relative(source), depth + 1);
      it.disable_recursion_pending();
    }
  };
  if (is_real_dir(source / ".git")) {
    git_folder(".git", 0);
    if (!path_exists(source / ".git/commondir")) git_folders_without_commondir.push_back((source / ".git").string());
    // Hooks somewhere else (core.hooksPath: husky's .husky/_ is ignored by git, so git diff
    // never shows it) run all the same: bound read-only too, made when missing.
    if (auto hooks = hooks_path(source / ".git/config"); hooks && hooks->is_relative() &&
        !hooks->lexically_normal().string().starts_with(".."))
      read_only(hooks->lexically_normal(), true);
  } else if (path_exists(source / ".git")) {
    // A linked worktree's or a submodule checkout's .git is a file naming the git folder:
    // bound read-only, so that it cannot be swapped for a folder of the agent's whose
    // config (core.fsmonitor) the host's next git status would run.
    read_only(".git", false);
  }
  for (const char* rel : {".envrc", ".direnv", ".vscode"}) read_only(rel, false);
}

}  // namespace

FilesystemRequest filesystem_request(const LaunchOptions& o, const AgentUserChoice& who,
                                     const std::optional<fs::path>& audit_db, const std::string& cwd) {
  FilesystemRequest r;
  r.workdir = o.workdir;
  r.cwd = cwd;
  r.ro = o.ro;
  r.rw = o.rw;
  r.hide = o.hide;
  if (o.workdir_quota) r.workdir_quota = workdir_quota_bytes(*o.workdir_quota);
  r.commit = o.commit;
  r.writable_hooks = o.writable_hooks;
  r.audit_db = audit_db;
  r.agent = who.agent;
  r.secret_homes.push_back(who.agent.home);
  if (who.invoking && who.invoking->home != who.agent.home) r.secret_homes.push_back(who.invoking->home);
  return r;
}

std::string why_not_writable(const fs::path& path, const std::optional<fs::path>& audit_db) {
  if (path == "/") return "the host's root is never writable";
  const std::string top = first_component(path);
  static constexpr std::array<std::string_view, 10> kSystem = {"etc",   "usr",   "bin",    "sbin",   "boot",
                                                               "lib",   "lib32", "lib64",  "libx32", "libexec"};
  if (std::find(kSystem.begin(), kSystem.end(), top) != kSystem.end())
    return "/" + top + " is a system folder; the agent may not change the host's system";
  if (auto k = kernel_folder(path); !k.empty()) return k + " is the kernel's; the agent has its own";
  if (audit_db) {
    const fs::path folder = canonical_path(*audit_db, fs::current_path().string()).parent_path();
    if (within(folder, path)) return "it holds the audit database " + audit_db->string() + " (--audit-db)";
  }
  return {};
}

namespace {

// A --rw or --ro path as asked for and where it is shown.
struct Wanted {
  const char* flag;
  std::string given;
  fs::path path;    // canonical: what is bound
  fs::path placed;  // where it is shown
  bool writable;
};

// --workdir, checked (bad input: exit 2); nullopt without the flag.
std::optional<fs::path> workdir_flag(const FilesystemRequest& r, FilesystemView& view) {
  std::optional<fs::path> workdir;
  if (r.workdir) {
    workdir = resolve("--workdir", *r.workdir, r.cwd);
    if (auto why = why_not_writable(*workdir, r.audit_db);
        !why.empty() && why.find("audit database") == std::string::npos)
      throw LaunchError(kExitUsage, "--workdir '" + *r.workdir + "': refused: " + why);
    if (path_exists(*workdir) && !is_dir(*workdir))
      throw LaunchError(kExitUsage, "--workdir '" + *r.workdir + "': not a directory");
    if (auto shared = shared_folder(*workdir, r.secret_homes); !shared.empty())
      view.warnings.push_back("--workdir " + workdir->string() + " is " + shared + "; it is writable as asked");
  }
  return workdir;
}

std::vector<Wanted> wanted_binds(const FilesystemRequest& r) {
  std::vector<Wanted> wanted;
  for (const auto& v : r.rw) {
    fs::path p = resolve("--rw", v, r.cwd);
    if (auto why = why_not_writable(p, r.audit_db); !why.empty())
      throw LaunchError(kExitUsage, "--rw '" + v + "': refused: " + why);
    wanted.push_back({"--rw", v, p, placed_path(p, v, r.cwd), true});
  }
  for (const auto& v : r.ro) {
    fs::path p = resolve("--ro", v, r.cwd);
    if (auto k = kernel_folder(p); !k.empty())
      throw LaunchError(kExitUsage, "--ro '" + v + "': refused: " + k + " is the kernel's; the agent has its own");
    wanted.push_back({"--ro", v, p, placed_path(p, v, r.cwd), false});
  }
  return wanted;
}

std::vector<fs::path> hidden_flags(const FilesystemRequest& r) {
  std::vector<fs::path> hides;
  for (const auto& v : r.hide) {
    fs::path p = resolve("--hide", v, r.cwd);
    if (p == "/") throw LaunchError(kExitUsage, "--hide '" + v + "': refused: the whole root cannot be hidden");
    hides.push_back(p);
    hides.push_back(placed_path(p, v, r.cwd));
  }

  return hides;
}

// The workdir the agent gets: the flag's if it exists (else degraded, or exit 125), else
// the current directory unless it is a shared or system folder.
void settle_workdir(const FilesystemRequest& r, std::optional<fs::path>& workdir, FilesystemView& view,
                    DegradedLayers& degraded) {
  if (workdir) {
    if (!path_exists(*workdir)) {
      if (!degraded.accepts("workdir"))
        throw LaunchError(kExitLauncherFailure, "--workdir '" + *r.workdir +
                                                    "': no such directory (accept running without one with "
                                                    "--allow-degraded workdir)");
      degraded.note("workdir: " + workdir->string() + " does not exist; nothing is writable but memory");
      view.no_workdir_reason = "--workdir " + workdir->string() + " does not exist (--allow-degraded workdir)";
      workdir.reset();
    }
  } else if (r.cwd.empty()) {
    view.no_workdir_reason = "the launcher's current directory is gone";
  } else {
    fs::path cwd = canonical_path(r.cwd, r.cwd);
    // Launched from one of these by habit, the agent would write far more than a project.
    if (auto shared = shared_folder(cwd, r.secret_homes); !shared.empty())
      throw LaunchError(kExitUsage, "the current directory " + cwd.string() + " is " + shared +
                                        ": it is not taken as the agent's workdir; give --workdir DIR (a project "
                                        "folder), or run netbox launch from one");
    // Only the kernel's and system folders are refused here: the default audit database
    // lives in the current directory, and its files are hidden one by one.
    std::string why = why_not_writable(cwd, std::nullopt);
    if (why.empty())
      workdir = cwd;
    else
      view.no_workdir_reason = "the current directory " + cwd.string() + " may not be writable (" + why +
                               "); give --workdir";
  }
}

// --workdir-quota's size, 0 without it (or degraded for want of overlayfs).
std::uint64_t workdir_quota(const FilesystemRequest& r, const std::optional<fs::path>& workdir,
                            const FilesystemView& view, DegradedLayers& degraded) {
  if (r.commit && r.workdir_quota == 0)
    throw LaunchError(kExitUsage, "--commit: only with --workdir-quota (without it the workdir is written in place)");
  std::uint64_t quota = r.workdir_quota;
  if (quota > 0) {
    if (!workdir)
      throw LaunchError(kExitUsage, "--workdir-quota: the agent has no workdir (" + view.no_workdir_reason + ")");
    // The overlay's options are a comma-separated list with ':' between lower layers.
    if (workdir->string().find_first_of(",:\\") != std::string::npos)
      throw LaunchError(kExitUsage, "--workdir-quota: the workdir " + workdir->string() +
                                        " has a ',', ':' or '\\' in its path, which an overlay cannot take");
    if (!overlay_supported()) {
      if (!degraded.accepts("workdir-quota"))
        throw LaunchError(kExitLauncherFailure,
                          "--workdir-quota: this kernel has no overlay file system loaded (modprobe overlay, or "
                          "accept writing the workdir in place with --allow-degraded workdir-quota)");
      degraded.note("workdir-quota: no overlayfs; the workdir is written in place");
      quota = 0;
    }
  }
  return quota;
}

// The workdir, --rw and --ro binds, the host-executed files in them kept read-only, in
// the order they are mounted.
void add_binds(const FilesystemRequest& r, const std::optional<fs::path>& workdir, std::uint64_t quota,
               const std::vector<Wanted>& wanted, FilesystemView& view, DegradedLayers& degraded) {
  AgentMounts& m = view.mounts;
  if (workdir) {
    view.workdir = workdir->string();
    view.workdir_quota = quota;
    m.binds.push_back({view.workdir, view.workdir, true, quota, false, false, {}});
    if (auto why = why_agent_cannot_write(*workdir, r.agent); !why.empty()) view.agent_cannot_write[view.workdir] = why;
  }
  for (const auto& w : wanted) {
    if (!path_exists(w.path)) {
      const char* layer = w.writable ? "rw" : "ro";
      if (!degraded.accepts(layer))
        throw LaunchError(kExitLauncherFailure, std::string(w.flag) + " '" + w.given +
                                                    "': no such file or directory (accept leaving it out with "
                                                    "--allow-degraded " + layer + ")");
      degraded.note(std::string(layer) + ": " + w.path.string() + " does not exist; left out");
      continue;
    }
    m.binds.push_back({w.placed.string(), w.path.string(), w.writable, 0, false, false, {}});
    if (w.writable)
      if (auto why = why_agent_cannot_write(w.path, r.agent); !why.empty())
        view.agent_cannot_write[w.placed.string()] = why;
  }
  if (!r.writable_hooks) {
    std::vector<BindMount> extra;
    for (const auto& b : m.binds)
      if (b.writable && is_real_dir(b.source))
        protect_host_executed(b.path, b.source, extra, m.git_folders_without_commondir);
    m.binds.insert(m.binds.end(), extra.begin(), extra.end());
  }
  // A bind below another must come after it, or it would be covered.
  auto depth = [](const BindMount& b) {
    const fs::path p(b.path);
    return std::distance(p.begin(), p.end());
  };
  std::stable_sort(m.binds.begin(), m.binds.end(),
                   [&](const BindMount& a, const BindMount& b) { return depth(a) < depth(b); });
}

// The agent's HOME (a fresh tmpfs) and what is hidden: the usual credentials, --hide.
void add_home_and_hidden(const FilesystemRequest& r, const std::vector<fs::path>& hides, AgentMounts& m) {
  const fs::path home = r.agent.home.empty() ? fs::path() : canonical_path(r.agent.home, "/");
  if (!home.empty() && home != "/" && is_dir(home) && why_not_writable(home, std::nullopt).find("system") ==
                                                                  std::string::npos) {
    m.home = home.string();
    m.home_uid = r.agent.uid;
    m.home_gid = r.agent.gid;
  }

  auto add_hidden = [&](const fs::path& p) {
    if (std::find(m.hidden.begin(), m.hidden.end(), p.string()) == m.hidden.end()) m.hidden.push_back(p.string());
  };
  for (const auto& h : r.secret_homes) {
    if (h.empty()) continue;
    // One that does not exist has nothing to show, and the read-only root keeps it so.
    for (auto s : kSecretHomePaths) {
      const fs::path p = canonical_path(fs::path(h) / s, "/");
      if (!path_exists(p)) continue;
      add_hidden(p);
      // Also under its own name, where a bind (of HOME, say) shows the symlink itself.
      add_hidden(placed_path(p, fs::path(h) / s, "/"));
    }
  }
  for (const auto& p : hides) add_hidden(p);
}

}  // namespace

FilesystemView plan_filesystem_view(const FilesystemRequest& r, DegradedLayers& degraded) {
  FilesystemView view;
  // Bad input first (exit 2), then what cannot be applied (exit 125).
  std::optional<fs::path> workdir = workdir_flag(r, view);
  const std::vector<Wanted> wanted = wanted_binds(r);
  const std::vector<fs::path> hides = hidden_flags(r);
  settle_workdir(r, workdir, view, degraded);
  const std::uint64_t quota = workdir_quota(r, workdir, view, degraded);
  add_binds(r, workdir, quota, wanted, view, degraded);
  add_home_and_hidden(r, hides, view.mounts);
  return view;
}

}  // namespace netbox::launcher
