#include "netbox/launcher/hidden_paths.hpp"

#include "netbox/launcher/launch.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;

fs::path canonical_or_lexical(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  fs::path c = fs::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal() : c;
}

// `p` is `base` or below it.
bool within(const fs::path& p, const fs::path& base) {
  auto rel = p.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

// The agent gets fresh file systems here; whatever the host had there is gone already.
bool already_hidden(const fs::path& p, const std::vector<fs::path>& bound, const fs::path& fresh_home) {
  for (const auto& b : bound)
    if (p == b || within(p, b)) return false;
  if (!fresh_home.empty() && within(p, fresh_home)) return true;
  for (std::string_view fresh : {"/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run", "/proc", "/sys"})
    if (within(p, fs::path(fresh))) return true;
  return false;
}

bool system_folder(const fs::path& folder) {
  if (std::distance(folder.begin(), folder.end()) <= 2) return true;  // "/" and "/etc", "/home", ...
  static constexpr std::array<std::string_view, 15> kSystem = {
      "/usr/bin",   "/usr/sbin",      "/usr/lib",       "/usr/lib64",     "/usr/libexec",
      "/usr/share", "/usr/local",     "/usr/local/bin", "/usr/local/lib", "/usr/local/share",
      "/var/lib",   "/var/log",       "/var/cache",     "/var/spool",     "/var/opt"};
  return std::find(kSystem.begin(), kSystem.end(), folder.string()) != kSystem.end();
}

bool folder_may_be_covered(const fs::path& folder, const std::vector<fs::path>& needed) {
  if (system_folder(folder)) return false;
  return std::none_of(needed.begin(), needed.end(), [&](const fs::path& n) { return within(n, folder); });
}

void add_unique(std::vector<std::string>& list, const fs::path& p) {
  if (std::find(list.begin(), list.end(), p.string()) == list.end()) list.push_back(p.string());
}

// A file the proxy reads that the agent could replace is not hidden by any mount: the
// agent renames its folder away and writes its own (a policy is reloaded when it changes).
void refuse_replaceable(const NetboxFiles& files, const std::vector<fs::path>& writable_paths) {
  for (const auto& w : writable_paths) {
    const fs::path folder = canonical_or_lexical(w);
    auto refuse = [&](const std::optional<fs::path>& file, const char* what) {
      if (file && within(canonical_or_lexical(*file), folder))
        throw LaunchError(kExitUsage, std::string(what) + " " + file->string() + " is inside " + folder.string() +
                                          ", which the agent may write: it could replace it; keep it outside");
    };
    refuse(files.policy, "--policy");
    refuse(files.proxy_policy, "the running proxy's policy");
    refuse(files.ca_key, "--ca-dir's key");
  }
}

// The paths to hide, gathered one file at a time, then whatever a covered folder holds
// already dropped (finish).
struct Hiding {
  fs::path home;                // the agent's fresh HOME (hidden already)
  std::vector<fs::path> bound;  // host paths bound into the view
  std::vector<fs::path> needed; // folders the agent needs: never covered whole
  HiddenPaths out;
  std::vector<fs::path> files;

  // `sharing`: when the folder is needed, it is covered all the same and its other
  // entries shown again (a mount on the file itself goes when the host replaces the file
  // by a rename, which editors and configuration tools do); else each file is covered.
  void hide_resolved(const fs::path& path, std::initializer_list<std::string_view> companions, bool sharing) {
    if (already_hidden(path, bound, home)) return;
    const fs::path folder = path.parent_path();
    // Covering the folder of a file shown in its place would take what is bound there
    // (a --ro beside the policy) with it: shown again instead.
    const bool binds_inside = sharing && std::any_of(bound.begin(), bound.end(),
                                                     [&](const fs::path& b) { return within(b, folder); });
    if (!binds_inside && folder_may_be_covered(folder, needed)) {
      add_unique(out.folders, folder);
      return;
    }
    if (sharing && folder != "/") {
      auto it = std::find_if(out.shared.begin(), out.shared.end(),
                             [&](const SharedFolder& s) { return s.folder == folder.string(); });
      if (it == out.shared.end()) it = out.shared.insert(out.shared.end(), SharedFolder{folder.string(), {}});
      it->hidden_names.push_back(path.filename().string());
      return;
    }
    files.push_back(path);
    for (auto suffix : companions) files.push_back(fs::path(path.string() + std::string(suffix)));
  }

  // The file where it is, and, when the path given reaches it through a symlink (a
  // Kubernetes ConfigMap's policy.json -> ..data/policy.json, whose ..data the host swaps
  // for a new ..TIMESTAMP folder beside the old), the folder the path names too: the next
  // version appears there, not beside the file the path resolves to today.
  void hide(const fs::path& file, std::initializer_list<std::string_view> companions, bool sharing) {
    const fs::path resolved = canonical_or_lexical(file);
    hide_resolved(resolved, companions, sharing);
    std::error_code ec;
    fs::path given = fs::absolute(file, ec).lexically_normal();
    if (!ec && given != resolved && given.parent_path() != resolved.parent_path())
      hide_resolved(canonical_or_lexical(given.parent_path()) / given.filename(), companions, sharing);
  }

  // A folder inside another covered one, or a file inside a covered folder, is gone already.
  HiddenPaths finish() {
    auto covered = [&](const fs::path& p, const std::string& self) {
      return std::any_of(out.folders.begin(), out.folders.end(),
                         [&](const std::string& f) { return f != self && within(p, fs::path(f)); });
    };
    std::vector<std::string> folders;
    for (const auto& f : out.folders)
      if (!covered(fs::path(f), f)) folders.push_back(f);
    out.folders = std::move(folders);
    for (const auto& f : files)
      if (!covered(f, {})) add_unique(out.files, f);
    std::vector<SharedFolder> shared;
    for (auto& f : out.shared)
      if (!covered(fs::path(f.folder), {})) shared.push_back(std::move(f));
    out.shared = std::move(shared);
    return std::move(out);
  }
};

}  // namespace

HiddenPaths plan_hidden_paths(const NetboxFiles& files, const std::vector<fs::path>& needed_paths,
                              const std::vector<fs::path>& bound_paths, const std::vector<fs::path>& writable_paths,
                              const fs::path& fresh_home) {
  refuse_replaceable(files, writable_paths);
  Hiding h;
  h.home = fresh_home.empty() ? fs::path() : canonical_or_lexical(fresh_home);
  for (const auto& b : bound_paths) h.bound.push_back(canonical_or_lexical(b));
  for (const auto& n : needed_paths)
    if (!n.empty()) h.needed.push_back(canonical_or_lexical(n));
  // SQLite never renames its database: covered file by file where its folder is needed
  // (the default location is the current directory).
  for (const auto& db : {files.audit_db, files.proxy_audit_db})
    if (db) h.hide(*db, {"-wal", "-shm", "-journal"}, false);
  if (files.control_socket) h.hide(*files.control_socket, {}, true);
  if (files.ca_key) h.hide(*files.ca_key, {}, true);  // whoever reads it impersonates every host
  for (const auto& policy : {files.policy, files.proxy_policy})
    if (policy) h.hide(*policy, {}, true);
  return h.finish();
}

bool hidden_paths_exist(const HiddenPaths& hidden) {
  std::error_code ec;
  auto exists = [&ec](const std::string& p) { return fs::exists(fs::symlink_status(p, ec)); };
  auto folder_exists = [&](const SharedFolder& s) { return exists(s.folder); };
  auto file_exists = [&](const std::string& f) { return f.ends_with("-journal") || exists(f); };
  return std::all_of(hidden.folders.begin(), hidden.folders.end(), exists) &&
         std::all_of(hidden.shared.begin(), hidden.shared.end(), folder_exists) &&
         std::all_of(hidden.files.begin(), hidden.files.end(), file_exists);
}

}  // namespace netbox::launcher
