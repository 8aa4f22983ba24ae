#pragma once
// The agent's filesystem view, built in its own mount namespace after nsjail and
// bubblewrap: a small tmpfs becomes the root (pivot_root), the host's tree is bound
// recursively into it and made read-only, nosuid and nodev on every submount; fresh
// /proc (hidepid=2, Docker's masked and read-only paths), a read-only sysfs of the
// agent's own network namespace, a minimal /dev, one sized tmpfs behind /tmp,
// /var/tmp, /dev/shm and the agent's HOME, fresh /run and /var/run; then the binds
// (the workdir, --rw, --ro) and, on top of everything, the hidden paths; then a
// second pivot_root into that tree, and the host's root detached.
#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/workdir_overlay.hpp"

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// /run and /var/run hold sockets and pid files, never data: a small fixed size.
inline constexpr std::uint64_t kRunTmpfsBytes = 16ULL * 1024 * 1024;

// A host path shown in the agent's view: at the same path, or, when the path given
// ended in a symlink, under that name with the target's content.
struct BindMount {
  std::string path;    // where it is shown: canonical folder, last component as given
  std::string source;  // what is shown: canonical
  bool writable = false;
  // Nonzero: an overlay whose upper layer is a tmpfs of this size (--workdir-quota).
  std::uint64_t quota = 0;
  // The view's own `path` bound onto itself, nothing from the host: a mount point cannot
  // be renamed or removed, so the folder (a project's .git) cannot be swapped for another.
  bool pin = false;
  // A missing folder `source` is made on the host (empty, owned as its parent) so that
  // it can be bound read-only: the agent must not create it (.git/hooks).
  bool make_missing = false;
  std::string note;  // why it is there, for the report; empty: asked for by a flag
  // Non-empty: the writable folder `source` lies in (canonical). The source is opened from
  // it without leaving it (openat2 RESOLVE_BENEATH) and bound from that descriptor, so that
  // a link another launch's agent puts on the way after the plan cannot lead the bind
  // (or a folder made for it) out of the folder.
  std::string within = {};
};

struct AgentMounts {
  // One tmpfs of this size backs /tmp, /var/tmp, /dev/shm and HOME together (--tmp-size).
  std::uint64_t tmp_bytes = 1ULL << 30;
  // The agent's HOME, canonical; covered by an empty folder of the tmpfs above, owned
  // by the agent. Empty: left as the read-only host shows it (it does not exist, or is /).
  std::string home;
  uid_t home_uid = 0;
  gid_t home_gid = 0;
  // In mount order: a bind below another comes after it (see plan_filesystem_view).
  std::vector<BindMount> binds;
  // Covered last, above every bind: a folder by an empty read-only tmpfs, anything else
  // by an empty read-only file. Canonical folders; one that does not exist, or a
  // symlink (its target is listed too), is skipped.
  std::vector<std::string> hidden;
  // Non-empty: the agent's /etc/resolv.conf, shown read-only over the host's (the DNS
  // view of the policy, issue 15). Where the host's is a symlink, its target is covered.
  std::string resolv_conf;
  // Non-empty bundle: the launch inspects TLS; the bundle is shown read-only over the
  // view's /etc/ssl/certs/ca-certificates.crt (and the JVM's store over Debian's, where
  // it exists), all three in kAgentTrustFolder (agent_trust.hpp).
  AgentTrustFiles trust;
  // The launcher's, not the init's: main repositories' git folders in writable binds (host
  // paths) that had no commondir at launch; one the agent makes is set aside at the end
  // (git_commondir.hpp).
  std::vector<std::string> git_folders_without_commondir;
};

// Call inside the new mount, PID and network namespaces, as root, before anything
// else uses paths. Throws std::runtime_error naming the mount. Returns the workdir
// overlay's descriptors when a bind has a quota (the caller owns them).
WorkdirOverlay setup_agent_mounts(const AgentMounts& mounts);

// netbox's own files the agent must not see, as absolute canonical paths (see
// hidden_paths.hpp for how they are chosen).
// A folder the agent needs that holds one of them: covered by a read-only tmpfs in
// which every other entry is shown again (bound, with what is mounted below it; a
// symlink made again), so that no rename on the host can show the hidden one. Entries
// the host adds later are not shown.
struct SharedFolder {
  std::string folder;
  std::vector<std::string> hidden_names;
};

struct HiddenPaths {
  std::vector<std::string> folders;  // covered by an empty read-only tmpfs
  std::vector<SharedFolder> shared;  // covered, the other entries shown again
  std::vector<std::string> files;    // each covered by an empty read-only file
};

// Call after setup_agent_mounts, once the files exist (the audit database is open).
// A listed file that does not exist is skipped; a folder that does not exist, or any
// mount that fails, throws.
void hide_paths(const HiddenPaths& hidden);

}  // namespace netbox::launcher
