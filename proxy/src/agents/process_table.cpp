#include "agents/process_table.hpp"

#include "netbox/audit/printable.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <deque>
#include <string>
#include <unordered_set>

namespace netbox::proxy {
namespace {

constexpr std::size_t kMaxExeBytes = 1024;

std::string proc(pid_t pid, const char* what) { return "/proc/" + std::to_string(pid) + "/" + what; }

// At most `limit` bytes of a /proc file; empty when it cannot be read.
std::string read_bounded(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out(limit, '\0');
  std::size_t have = 0;
  while (have < limit) {
    const ssize_t n = ::read(fd, out.data() + have, limit - have);
    if (n <= 0) break;
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(have);
  return out;
}

struct Dir {
  DIR* d = nullptr;
  explicit Dir(const std::string& path) : d(::opendir(path.c_str())) {}
  ~Dir() {
    if (d) ::closedir(d);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
};

std::optional<pid_t> number(std::string_view text) {
  pid_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

enum class FdScan { found, not_found, over_budget, no_access };

// Reads `pid`'s descriptors, counting each against `left`.
FdScan scan_fds(pid_t pid, const std::string& wanted, std::size_t& left,
                std::chrono::steady_clock::time_point deadline) {
  const std::string path = proc(pid, "fd");
  Dir dir(path);
  if (!dir.d) return errno == EACCES || errno == EPERM ? FdScan::no_access : FdScan::not_found;
  const int dfd = ::dirfd(dir.d);
  char link[64];
  while (const dirent* e = ::readdir(dir.d)) {
    if (e->d_name[0] == '.') continue;
    if (left == 0 || std::chrono::steady_clock::now() > deadline) return FdScan::over_budget;
    --left;
    const ssize_t n = ::readlinkat(dfd, e->d_name, link, sizeof link);
    if (n > 0 && std::string_view(link, static_cast<std::size_t>(n)) == wanted) return FdScan::found;
  }
  return FdScan::not_found;
}

// `pid`'s children, from each of its threads' children lists, appended to `out`.
void children_of(pid_t pid, std::deque<pid_t>& out, std::size_t most) {
  Dir tasks(proc(pid, "task"));
  if (!tasks.d) return;
  while (const dirent* t = ::readdir(tasks.d)) {
    if (t->d_name[0] == '.') continue;
    const std::string list = read_bounded(proc(pid, "task/") + t->d_name + "/children", 64 * 1024);
    std::string_view rest = list;
    while (!rest.empty() && out.size() < most) {
      const auto space = rest.find(' ');
      if (auto child = number(rest.substr(0, space))) out.push_back(*child);
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
  }
}

std::string socket_link(std::uint64_t inode) { return "socket:[" + std::to_string(inode) + "]"; }

// `pid`'s parent (field 4 of /proc/PID/stat, after the command's name in parentheses,
// which may hold anything); nullopt when it is gone.
std::optional<pid_t> parent_of(pid_t pid) {
  const std::string stat = read_bounded(proc(pid, "stat"), 1024);
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return std::nullopt;
  std::string_view rest = std::string_view(stat).substr(close + 4);  // past ") S "
  rest = rest.substr(0, rest.find(' '));
  if (rest == "0") return 0;
  return number(rest);
}

}  // namespace

bool descends_from(pid_t pid, pid_t ancestor) {
  if (pid <= 0 || ancestor <= 0 || pid == ancestor) return false;
  // Bounded: a chain of parents ends at the PID namespace's init (parent 0) long before.
  for (int hops = 0; hops < 4096; ++hops) {
    const auto parent = parent_of(pid);
    if (!parent || *parent <= 0) return false;
    if (*parent == ancestor) return true;
    pid = *parent;
  }
  return false;
}

SocketOwner find_socket_owner(pid_t root, std::uint64_t inode, const ScanBudget& budget) {
  const std::string wanted = socket_link(inode);
  std::deque<pid_t> queue{root};
  std::unordered_set<pid_t> seen;
  std::size_t left = budget.descriptors;
  bool denied = false;
  while (!queue.empty()) {
    const pid_t pid = queue.front();
    queue.pop_front();
    if (!seen.insert(pid).second) continue;
    if (seen.size() > budget.processes) return {ScanEnd::over_budget, 0};
    switch (scan_fds(pid, wanted, left, budget.deadline)) {
      case FdScan::found: return {ScanEnd::found, pid};
      case FdScan::over_budget: return {ScanEnd::over_budget, 0};
      case FdScan::no_access: denied = true; break;
      case FdScan::not_found: break;
    }
    children_of(pid, queue, budget.processes);
  }
  return {denied ? ScanEnd::no_access : ScanEnd::not_found, 0};
}

bool holds_socket(pid_t pid, std::uint64_t inode, std::size_t max_descriptors) {
  std::size_t left = max_descriptors;
  return scan_fds(pid, socket_link(inode), left, std::chrono::steady_clock::time_point::max()) == FdScan::found;
}

std::string first_words(std::string_view cmdline) {
  std::string out;
  std::size_t words = 0;
  bool cut = false;
  while (!cmdline.empty()) {
    const auto nul = cmdline.find('\0');
    const std::string_view word = cmdline.substr(0, nul);
    if (words == kArgvWords || out.size() + word.size() > kArgvBytes) {
      cut = true;
      if (words == 0) out.append(word.substr(0, kArgvBytes));  // one long word: its start
      break;
    }
    if (words++) out += ' ';
    out.append(word);
    if (nul == std::string_view::npos) break;
    cmdline.remove_prefix(nul + 1);
    // A trailing NUL ends the last word; a process that rewrote its arguments may leave
    // a run of them: those are no words.
    while (!cmdline.empty() && cmdline.front() == '\0') cmdline.remove_prefix(1);
  }
  std::string printable = audit::escape_controls(out);
  if (cut) printable += "…";
  return printable;
}

std::optional<audit::ProcessOrigin> describe_process(pid_t pid) {
  audit::ProcessOrigin o;
  const std::string status = read_bounded(proc(pid, "status"), 8192);
  if (status.empty()) return std::nullopt;
  // "NSpid:\t4711\t12": the last is the pid in the process's own (innermost) namespace.
  if (const auto at = status.find("\nNSpid:"); at != std::string::npos) {
    const auto end = status.find('\n', at + 1);
    std::string_view line = std::string_view(status).substr(at + 7, end == std::string::npos ? end : end - at - 7);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    const auto last = line.find_last_of(" \t");
    if (auto v = number(last == std::string_view::npos ? line : line.substr(last + 1))) o.pid = *v;
  }
  char exe[kMaxExeBytes];
  const ssize_t n = ::readlink(proc(pid, "exe").c_str(), exe, sizeof exe);
  // The agent names its files: a path it chose is escaped like any text it sends.
  o.exe = n > 0 ? audit::escape_controls(std::string_view(exe, static_cast<std::size_t>(n))) : "unknown";
  if (n == static_cast<ssize_t>(sizeof exe)) o.exe += "…";
  o.argv = first_words(read_bounded(proc(pid, "cmdline"), 4096));
  return o;
}

}  // namespace netbox::proxy
