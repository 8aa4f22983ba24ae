#include "netbox/launcher/cgroup_discovery.hpp"

#include <algorithm>
#include <sstream>

namespace netbox::launcher {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + static_cast<long>(i) + 1, s.begin() + static_cast<long>(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

std::vector<ProcCgroupEntry> parse_proc_cgroup(const std::string& text) {
  std::vector<ProcCgroupEntry> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // The path may itself hold ':', so only the first two separate.
    auto first = line.find(':');
    if (first == std::string::npos) continue;
    auto second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    ProcCgroupEntry e;
    try {
      e.hierarchy = std::stoi(line.substr(0, first));
    } catch (const std::exception&) {
      continue;
    }
    std::string list = line.substr(first + 1, second - first - 1);
    if (!list.empty()) e.controllers = split(list, ',');
    e.path = line.substr(second + 1);
    if (e.path.empty() || e.path.front() != '/') continue;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<CgroupMount> parse_cgroup_mounts(const std::string& mountinfo) {
  std::vector<CgroupMount> out;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string& fstype = *(dash + 1);
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    CgroupMount m;
    m.root = unescape(f[3]);
    m.mount_point = unescape(f[4]);
    m.unified = fstype == "cgroup2";
    if (!m.unified)
      for (const auto& opt : split(*(dash + 3), ','))
        if (opt != "rw" && opt != "ro") m.controllers.push_back(opt);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::filesystem::path> own_cgroup_dir(const std::vector<ProcCgroupEntry>& entries,
                                                    const std::vector<CgroupMount>& mounts,
                                                    const std::string& controller) {
  const bool unified = controller.empty();
  const ProcCgroupEntry* entry = nullptr;
  for (const auto& e : entries)
    if (unified ? (e.hierarchy == 0 && e.controllers.empty()) : has(e.controllers, controller)) entry = &e;
  if (!entry) return std::nullopt;
  for (const auto& m : mounts) {
    if (m.unified != unified || (!unified && !has(m.controllers, controller))) continue;
    // The mount shows the hierarchy from m.root down; the process's folder must lie below.
    const std::string& root = m.root;
    std::string rel;
    if (root == "/") {
      rel = entry->path;
    } else if (entry->path == root) {
      rel = "/";
    } else if (entry->path.starts_with(root + "/")) {
      rel = entry->path.substr(root.size());
    } else {
      continue;
    }
    if (rel == "/") return m.mount_point;
    return (m.mount_point / rel.substr(1)).lexically_normal();
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> unified_mount(const std::vector<CgroupMount>& mounts) {
  for (const auto& m : mounts)
    if (m.unified && m.root == "/") return m.mount_point;
  return std::nullopt;
}

}  // namespace netbox::launcher
