#include "config_file.hpp"

#include "netbox/policy/json_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace netbox::cli {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buf[8192];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(path + ": cannot read: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (1 << 20)) throw UsageError(path + ": larger than 1 MiB; not a config file");
  }
}

}  // namespace

bool apply_config_file(FlagTable& flags, const std::string& path, bool required, const std::vector<uid_t>& owners) {
  const Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    // The default file of a package is root:netbox 0640: another user runs without it.
    if (!required && (errno == ENOENT || (errno == EACCES && ::geteuid() != 0))) return false;
    throw UsageError(path + ": cannot open: " + std::strerror(errno));
  }
  // Run as root, the file must be its owners' and writable by no one else (its folder too).
  if (::geteuid() == 0) {
    const policy::FileTrust trust{.owners = owners,
                                  .own_group_may_write = false,
                                  .why = "whoever may write it decides what netbox lets through"};
    if (auto problem = policy::untrusted_because(file.fd, path, trust)) throw UsageError(path + ": " + *problem);
  }
  try {
    const policy::JsonFile json(read_all(file.fd, path), path);
    flags.apply_config(json);
  } catch (const policy::PolicyError& e) {
    throw UsageError(e.what());  // "FILE:LINE:COLUMN: invalid JSON: ..."
  }
  return true;
}

}  // namespace netbox::cli
