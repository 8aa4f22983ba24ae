#include "netbox/launcher/agent_access.hpp"
#include "netbox/launcher/privileges.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace netbox::launcher {
namespace {

std::string owner_and_mode(const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "owner uid " + std::to_string(st.st_uid) + ", gid " + std::to_string(st.st_gid) + ", mode " + mode;
}

// A vfork: the probe shares the launcher's memory until its _exit, so no page table is
// copied and no page faulted in again (a fork here was one launch's whole second copy of
// its address space). Its uid and groups are its own task's: raw syscalls only, since
// glibc's setresuid/setgroups would signal the launcher's other threads to change theirs
// (they share this memory), and nothing here writes memory but errno and the failed step's name.
bool access_as(const std::filesystem::path& path, int mask, const AgentUser& user) {
  const char* file = path.c_str();
  const pid_t pid = ::vfork();
  if (pid < 0) return false;  // unknown: never claim writable
  if (pid == 0) {
    const char* step = "";
    if (set_ids_of_this_task(user, &step) != 0) ::_exit(2);
    ::_exit(::syscall(SYS_faccessat, AT_FDCWD, file, mask) == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool mode_allows(const struct stat& st, const AgentUser& user) {
  if (user.uid == 0) return true;
  const bool dir = S_ISDIR(st.st_mode);
  auto allows = [&](mode_t w, mode_t x) { return (st.st_mode & w) && (!dir || (st.st_mode & x)); };
  if (st.st_uid == user.uid) return allows(S_IWUSR, S_IXUSR);
  const bool in_group = st.st_gid == user.gid ||
                        std::find(user.groups.begin(), user.groups.end(), st.st_gid) != user.groups.end();
  if (in_group) return allows(S_IWGRP, S_IXGRP);
  return allows(S_IWOTH, S_IXOTH);
}

}  // namespace

std::string why_agent_cannot_write(const std::filesystem::path& path, const AgentUser& user) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};  // a missing path is reported where it is planned
  // A folder is written through: it needs search too.
  const int mask = S_ISDIR(st.st_mode) ? W_OK | X_OK : W_OK;
  bool ok;
  if (::geteuid() == user.uid && ::getegid() == user.gid)
    ok = ::faccessat(AT_FDCWD, path.c_str(), mask, AT_EACCESS) == 0;
  else if (::geteuid() == 0)
    ok = access_as(path, mask, user);
  else
    ok = mode_allows(st, user);
  if (ok) return {};
  return owner_and_mode(st);
}

}  // namespace netbox::launcher
