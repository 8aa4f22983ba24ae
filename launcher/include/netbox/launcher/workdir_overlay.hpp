#pragma once
// --workdir-quota: the agent writes its workdir into an overlay whose upper layer is a
// tmpfs of the quota's size (writing more fails with ENOSPC). The init keeps two
// descriptors the agent cannot reach: the upper layer, and the host's workdir. When the
// agent has exited, the changes are counted and either discarded (the tmpfs goes with
// the namespace) or, with --commit, copied onto the host's workdir.
#include <cstdint>
#include <string>

namespace netbox::launcher {

struct WorkdirOverlay {
  int upper_fd = -1;  // the upper layer's root folder
  int host_fd = -1;   // the host's workdir (writable), outside the agent's view
  std::string path;   // the workdir, for messages
  bool active() const { return upper_fd >= 0; }
};

// Bytes in use on the upper layer's tmpfs: what the agent wrote (new and changed files).
std::uint64_t overlay_bytes_written(int upper_fd);

// Applies the upper layer onto the host folder: new and changed files, folders and
// symlinks are written (setuid and setgid bits dropped), deletions (whiteouts) and
// replaced folders (opaque) remove the host's. Never follows a symlink of the host's.
// Throws std::runtime_error naming the path that failed.
void commit_overlay(int upper_fd, int host_fd);

}  // namespace netbox::launcher
