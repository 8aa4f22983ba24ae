#include "netbox/launcher/operator_socket.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

namespace netbox::launcher {

std::filesystem::path operator_sockets_dir(const std::filesystem::path& state_dir) { return state_dir / "launches"; }

std::optional<std::filesystem::path> prepare_operator_socket(const std::filesystem::path& state_dir, pid_t launcher) {
  const auto dir = operator_sockets_dir(state_dir);
  const auto refuse = [&dir](const std::string& why) -> std::optional<std::filesystem::path> {
    std::cerr << "netbox launch: no operator socket for this launch (`netbox agent` cannot reach it): " << dir.string()
              << " " << why << "\n";
    return std::nullopt;
  };
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return refuse(std::string("cannot be made: ") + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return refuse(std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return refuse("is not a folder");
  if (st.st_uid != ::geteuid()) return refuse("is owned by uid " + std::to_string(st.st_uid) + ", not the launcher's");
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0)
    return refuse(std::string("cannot be set to mode 0700: ") + std::strerror(errno));
  return dir / (std::to_string(launcher) + ".sock");
}

}  // namespace netbox::launcher
