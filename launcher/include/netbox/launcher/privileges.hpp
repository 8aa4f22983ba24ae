#pragma once
// Who the agent runs as, and giving up everything else.
#include <sys/types.h>

#include <string>
#include <vector>

namespace netbox::launcher {

struct AgentUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string home;
};

// A name or numeric uid. Throws LaunchError (exit 2) for an unknown user.
AgentUser resolve_user(const std::string& user);

// Throws LaunchError (exit 125) naming every missing capability the launcher needs.
void require_launcher_capabilities();

// In the agent child (no allocation): bounding set dropped while CAP_SETPCAP is
// still held, then setgroups, setresgid, setresuid, then every remaining capability
// set cleared. Returns 0 or an errno, with `step` naming what failed.
int drop_to_user(const AgentUser& user, const char** step);
// setgroups, setresgid, setresuid of the calling task alone, as raw syscalls: for a child
// that shares its parent's memory until it execs or exits (the agent's start, the
// workdir probe), where glibc's wrappers would signal every thread that memory lists to
// change ids too. Returns 0 or an errno, with `step` naming what failed.
int set_ids_of_this_task(const AgentUser& user, const char** step);
int set_no_new_privs(const char** step);
int clear_all_capabilities(const char** step);

}  // namespace netbox::launcher
