// `netbox gc`'s part for the launches' operator sockets (operator_socket.hpp): a launcher
// killed with SIGKILL leaves STATE/launches/PID.sock behind.
#include "netbox/launcher/operator_socket.hpp"
#include "netbox/launcher/subnet_pool.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>

namespace netbox::launcher {

namespace {

// When process `pid` started, as Unix time in ticks' precision; nullopt when there is none.
std::optional<std::chrono::system_clock::time_point> started(pid_t pid) {
  const auto ticks = process_start_time(pid);  // 0: gone, or a zombie
  if (ticks == 0) return std::nullopt;
  std::ifstream proc_stat("/proc/stat");
  long long btime = 0;
  for (std::string key; proc_stat >> key;)
    if (key == "btime" && proc_stat >> btime) break;
  return std::chrono::system_clock::time_point(std::chrono::seconds(btime)) +
         std::chrono::milliseconds(ticks * 1000 / static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK)));
}

// The launcher that made the socket still runs: a process holds its pid and started before
// the socket was made (a pid is not reused while its holder lives; a later process with
// that pid is another one). btime has a second's precision: a second of slack.
bool maker_alive(pid_t pid, const struct stat& st) {
  const auto start = started(pid);
  if (!start) return false;
  const auto made = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                         std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  return *start <= made + std::chrono::seconds(1);
}

// Nothing listens on it: a connection is refused (never true of a live launch's socket).
bool nobody_listens(const std::filesystem::path& path) {
  sockaddr_un addr{};
  if (path.native().size() >= sizeof addr.sun_path) return false;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

}  // namespace

void collect_operator_sockets(const std::filesystem::path& state_dir, std::vector<std::string>& removed) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(operator_sockets_dir(state_dir), ec)) {
    const auto name = entry.path().filename().string();
    if (!name.ends_with(".sock")) continue;
    pid_t pid = 0;
    const auto digits = std::string_view(name).substr(0, name.size() - 5);
    if (auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
        err != std::errc() || end != digits.data() + digits.size() || pid <= 0)
      continue;  // not a launcher's: not ours to judge
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    // Both: the launcher is gone (or its pid is another process's now), and no one serves it.
    if (maker_alive(pid, st) || !nobody_listens(entry.path())) continue;
    if (std::filesystem::remove(entry.path(), ec))
      removed.push_back("operator socket " + entry.path().string() + " (launcher pid " + std::to_string(pid) +
                        " is gone)");
  }
}

}  // namespace netbox::launcher
