#include "netbox/launcher/mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netbox::launcher {
namespace {

void mount_or_throw(const char* source, const char* target, const char* type, unsigned long flags, const char* data) {
  if (::mount(source, target, type, flags, data) != 0)
    throw std::runtime_error(std::string("mount ") + (type ? type : "bind") + " on " + target + ": " +
                             std::strerror(errno));
}

bool is_real_directory(const char* path) {
  struct stat st {};
  return ::lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 || ::chmod(path.c_str(), mode) != 0)
    throw std::runtime_error("mkdir " + path + ": " + std::strerror(errno));
}

std::string tmpfs_options(std::uint64_t bytes, const char* mode) {
  return "size=" + std::to_string(bytes) + ",mode=" + mode;
}

// The staging root of the shared tmpfs, on /tmp until /tmp itself is covered by its
// own subfolder: the other subfolders are then reachable only where they are bound.
constexpr const char* kShared = "/tmp";

// Binds a subfolder of the shared tmpfs over `target`, when `target` is a real folder
// of the host (a symlink, e.g. /var/tmp -> /tmp on some systems, is already covered).
void bind_shared(const char* sub, const char* target) {
  if (!is_real_directory(target)) return;
  const std::string source = std::string(kShared) + "/" + sub;
  make_dir(source, 01777);
  mount_or_throw(source.c_str(), target, nullptr, MS_BIND, nullptr);
}

}  // namespace

void setup_agent_mounts(const AgentMounts& mounts) {
  // Nothing done here may propagate back to the host's mounts.
  mount_or_throw(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  // hidepid=2: the agent's user sees only its own processes, not the init (whose
  // memory is a copy of the launcher's) nor anything else running as root.
  mount_or_throw("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
  // A sysfs mounted here belongs to this network namespace: /sys/class/net lists only
  // lo and eth0, not the host's interfaces and every other agent's veth.
  mount_or_throw("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  // One budget for every place an agent writes temporary data to memory.
  mount_or_throw("tmpfs", kShared, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options(mounts.tmp_bytes, "0755").c_str());
  bind_shared("shm", "/dev/shm");
  bind_shared("var-tmp", "/var/tmp");
  bind_shared("tmp", "/tmp");
  const std::string run = tmpfs_options(kRunTmpfsBytes, "0755");
  mount_or_throw("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, run.c_str());
  // On most systems /var/run is a symlink to /run, already covered.
  if (is_real_directory("/var/run")) mount_or_throw("tmpfs", "/var/run", "tmpfs", MS_NOSUID | MS_NODEV, run.c_str());
}

void hide_paths(const HiddenPaths& hidden) {
  for (const auto& folder : hidden.folders)
    mount_or_throw("tmpfs", folder.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=4k,mode=0555");
  if (hidden.files.empty()) return;
  // The empty file lives on /run's fresh tmpfs only until it is bound everywhere:
  // the mounts keep it alive after the unlink.
  const char* empty = "/run/.netbox-empty";
  int fd = ::open(empty, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
  if (fd < 0) throw std::runtime_error(std::string("creating ") + empty + ": " + std::strerror(errno));
  ::close(fd);
  try {
    for (const auto& file : hidden.files) {
      struct stat st {};
      if (::lstat(file.c_str(), &st) != 0 && errno == ENOENT) continue;
      mount_or_throw(empty, file.c_str(), nullptr, MS_BIND, nullptr);
      mount_or_throw(nullptr, file.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     nullptr);
    }
  } catch (...) {
    ::unlink(empty);
    throw;
  }
  ::unlink(empty);
}

}  // namespace netbox::launcher
