#include "netbox/launcher/git_commondir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace netbox::launcher {

std::vector<std::string> set_aside_new_commondirs(const std::vector<std::string>& git_folders) {
  std::vector<std::string> set_aside;
  const std::string aside = "commondir.netbox-" + std::to_string(::getpid());
  for (const auto& folder : git_folders) {
    // The folder itself, not a link the agent put in its place (it was pinned while the
    // agent ran; the agent is gone now).
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) continue;
    struct stat st {};
    if (::fstatat(dir, "commondir", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        ::renameat(dir, "commondir", dir, aside.c_str()) == 0)
      set_aside.push_back(folder + "/commondir -> " + folder + "/" + aside);
    ::close(dir);
  }
  return set_aside;
}

}  // namespace netbox::launcher
