#include "netbox/launcher/cgroup_backend.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace netbox::launcher {

void write_cgroup_file(const std::filesystem::path& file, const std::string& value) {
  // One write(2) per value: cgroup files take a whole value per write, and a short or
  // failed write is the kernel refusing it (EINVAL, EBUSY, ENOSPC...).
  int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(file.string() + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    throw std::runtime_error("writing '" + value + "' to " + file.string() + ": " +
                             (n < 0 ? std::strerror(err) : "short write"));
}

std::optional<std::string> read_cgroup_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

std::optional<std::uint64_t> to_number(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

void thaw_cgroup(const std::filesystem::path& dir) noexcept {
  std::error_code ec;
  for (const auto& [file, value] : {std::pair{"freezer.state", "THAWED"}, std::pair{"cgroup.freeze", "0"}}) {
    if (!std::filesystem::exists(dir / file, ec)) continue;
    try {
      write_cgroup_file(dir / file, value);
    } catch (const std::exception&) {
    }
  }
}

std::vector<pid_t> cgroup_procs(const std::filesystem::path& dir) {
  std::vector<pid_t> out;
  std::ifstream in(dir / "cgroup.procs");
  for (long pid; in >> pid;)
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
  return out;
}

bool kill_cgroup(const std::filesystem::path& dir, CgroupVersion version, std::chrono::steady_clock::time_point deadline) {
  // v2 kills the whole subtree at once where the kernel has cgroup.kill (5.14+);
  // otherwise each process listed is killed until none is left (a fork racing the kill
  // shows up in the next listing).
  std::error_code ec;
  if (version == CgroupVersion::v2 && std::filesystem::exists(dir / "cgroup.kill", ec)) {
    try {
      write_cgroup_file(dir / "cgroup.kill", "1");
    } catch (const std::exception&) {
    }
  }
  for (;;) {
    const auto pids = cgroup_procs(dir);
    if (pids.empty()) return true;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    thaw_cgroup(dir);  // after the signal: a thawed task must not run on before it dies
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Killed processes leave the cgroup only once the kernel has torn them down.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::optional<std::uint64_t> cgroup_number(const std::filesystem::path& file) {
  auto text = read_cgroup_file(file);
  if (!text) return std::nullopt;
  return to_number(*text);
}

std::optional<std::uint64_t> cgroup_key(const std::filesystem::path& file, const std::string& key) {
  auto text = read_cgroup_file(file);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  for (std::string k, v; in >> k >> v;)
    if (k == key) return to_number(v);
  return std::nullopt;
}

void attach_to_cgroup(const std::filesystem::path& dir, pid_t pid) {
  write_cgroup_file(dir / "cgroup.procs", std::to_string(pid));
}

std::string remove_cgroup(const std::filesystem::path& dir, CgroupVersion version) noexcept {
  try {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      kill_cgroup(dir, version, std::chrono::steady_clock::now());
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
      int err = errno;
      if (err != EBUSY || std::chrono::steady_clock::now() >= deadline)
        return "cannot remove the cgroup " + dir.string() + ": " + std::strerror(err);
      // Killed processes leave the cgroup only once the kernel has torn them down.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace netbox::launcher
