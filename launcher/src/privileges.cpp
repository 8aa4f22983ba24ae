#include "netbox/launcher/privileges.hpp"

#include "netbox/launcher/launch.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace netbox::launcher {

AgentUser resolve_user(const std::string& user) {
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  uid_t numeric = 0;
  auto [ptr, ec] = std::from_chars(user.data(), user.data() + user.size(), numeric);
  bool is_number = !user.empty() && ec == std::errc{} && ptr == user.data() + user.size();
  int rc = is_number ? getpwuid_r(numeric, &pw, buf.data(), buf.size(), &found)
                     : getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0 || found == nullptr)
    throw LaunchError(kExitUsage, "--user '" + user + "': no such user");
  AgentUser out;
  out.name = pw.pw_name;
  out.uid = pw.pw_uid;
  out.gid = pw.pw_gid;
  out.home = pw.pw_dir ? pw.pw_dir : "/";
  int n = 64;
  out.groups.resize(static_cast<std::size_t>(n));
  while (getgrouplist(pw.pw_name, pw.pw_gid, out.groups.data(), &n) < 0) out.groups.resize(static_cast<std::size_t>(n));
  out.groups.resize(static_cast<std::size_t>(n));
  return out;
}

void require_launcher_capabilities() {
  struct Need {
    cap_value_t cap;
    const char* name;
    const char* why;
  };
  static constexpr Need needs[] = {
      {CAP_NET_ADMIN, "CAP_NET_ADMIN", "veth links, addresses and nftables rules"},
      {CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "new namespaces and mounts"},
      {CAP_SETUID, "CAP_SETUID", "running the agent as --user"},
      {CAP_SETGID, "CAP_SETGID", "the agent's groups"},
      {CAP_SETPCAP, "CAP_SETPCAP", "dropping the agent's capability bounding set"},
  };
  cap_t caps = cap_get_proc();
  if (caps == nullptr) throw LaunchError(kExitLauncherFailure, "cannot read the launcher's capabilities");
  std::string missing;
  for (const auto& need : needs) {
    cap_flag_value_t v = CAP_CLEAR;
    if (cap_get_flag(caps, need.cap, CAP_EFFECTIVE, &v) != 0 || v != CAP_SET)
      missing += std::string("\n  ") + need.name + " (" + need.why + ")";
  }
  cap_free(caps);
  if (!missing.empty())
    throw LaunchError(kExitLauncherFailure,
                      "not enough privilege: netbox launch needs these capabilities, which it does not have:" +
                          missing + "\nRun it as root (for example with sudo).");
}

int drop_to_user(const AgentUser& user, const char** step) {
  // The bounding set can only shrink while CAP_SETPCAP is held, which setresuid
  // away from root takes away; so it goes first.
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      *step = "dropping the capability bounding set";
      return errno;
    }
  }
  if (int err = set_ids_of_this_task(user, step)) return err;
  // The kernel made this task as dumpable as fs.suid_dumpable says when its ids changed;
  // where that is 1, the agent's user could ptrace it until its exec (which makes it
  // dumpable again, for the agent's own debuggers): not from here on.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    *step = "PR_SET_DUMPABLE";
    return errno;
  }
  return 0;
}

// The 32-bit id calls where a platform has both (i386, 32-bit ARM): the plain ones there
// take 16-bit ids, which would cut an agent's uid of its own (2000000000 and up) to
// another user's.
#if defined(SYS_setresuid32)
constexpr long kSetgroups = SYS_setgroups32, kSetresgid = SYS_setresgid32, kSetresuid = SYS_setresuid32;
#else
constexpr long kSetgroups = SYS_setgroups, kSetresgid = SYS_setresgid, kSetresuid = SYS_setresuid;
#endif

int set_ids_of_this_task(const AgentUser& user, const char** step) {
  if (syscall(kSetgroups, user.groups.size(), user.groups.data()) != 0) {
    *step = "setgroups";
    return errno;
  }
  if (syscall(kSetresgid, user.gid, user.gid, user.gid) != 0) {
    *step = "setresgid";
    return errno;
  }
  if (syscall(kSetresuid, user.uid, user.uid, user.uid) != 0) {
    *step = "setresuid";
    return errno;
  }
  return 0;
}

int set_no_new_privs(const char** step) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *step = "PR_SET_NO_NEW_PRIVS";
    return errno;
  }
  return 0;
}

int clear_all_capabilities(const char** step) {
  // Matters when --user is root: setresuid(0) keeps the capability sets.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    *step = "clearing ambient capabilities";
    return errno;
  }
  // capset itself, not libcap's cap_init/cap_set_proc: those allocate, and the agent runs in
  // the init's memory until its exec (start_agent), where a process of the agent's user may
  // kill it at any moment after its change of ids, never inside the init's allocator.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, none) != 0) {
    *step = "clearing capabilities";
    return errno;
  }
  return 0;
}

}  // namespace netbox::launcher
