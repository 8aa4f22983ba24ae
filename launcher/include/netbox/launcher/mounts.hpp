#pragma once
// The agent's mount namespace: private propagation; its own /proc (other users'
// processes invisible), a read-only sysfs of its own network namespace; fresh sized
// tmpfs on /tmp, /var/tmp, /dev/shm, /run and /var/run so host Unix sockets
// (docker.sock, ...), host shared memory and host temporary files are out of reach.
#include <cstdint>
#include <string>
#include <vector>

namespace netbox::launcher {

// /run and /var/run hold sockets and pid files, never data: a small fixed size.
inline constexpr std::uint64_t kRunTmpfsBytes = 16ULL * 1024 * 1024;

struct AgentMounts {
  // One tmpfs of this size backs /tmp, /var/tmp and /dev/shm together (--tmp-size).
  std::uint64_t tmp_bytes = 1ULL << 30;
};

// Call inside the new mount, PID and network namespaces. Throws std::runtime_error
// naming the mount.
void setup_agent_mounts(const AgentMounts& mounts);

// netbox's own files the agent must not see, as absolute canonical paths (see
// hidden_paths.hpp for how they are chosen).
struct HiddenPaths {
  std::vector<std::string> folders;  // covered by an empty read-only tmpfs
  std::vector<std::string> files;    // each covered by an empty read-only file
};

// Call after setup_agent_mounts, once the files exist (the audit database is open).
// A listed file that does not exist is skipped; a folder that does not exist, or any
// mount that fails, throws.
void hide_paths(const HiddenPaths& hidden);

}  // namespace netbox::launcher
