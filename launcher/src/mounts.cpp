#include "netbox/launcher/mounts.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netbox::launcher {
namespace {

void mount_or_throw(const char* source, const char* target, const char* type, unsigned long flags, const char* data) {
  if (::mount(source, target, type, flags, data) != 0)
    throw std::runtime_error(std::string("mount ") + (type ? type : "") + " on " + target + ": " + std::strerror(errno));
}

bool is_real_directory(const char* path) {
  struct stat st {};
  return ::lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

void setup_agent_mounts() {
  // Nothing done here may propagate back to the host's mounts.
  mount_or_throw(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  mount_or_throw("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  mount_or_throw("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_or_throw("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  // On most systems /var/run is a symlink to /run, already covered.
  if (is_real_directory("/var/run")) mount_or_throw("tmpfs", "/var/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
}

}  // namespace netbox::launcher
