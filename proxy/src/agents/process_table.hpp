#pragma once
// The agent's processes as /proc shows them to the proxy: which one holds a socket, and
// what it runs. Every read is bounded (processes, descriptors, time, bytes), for the agent
// chooses how many processes and descriptors it has and what its command lines say. Reading
// another user's /proc/PID/fd needs ptrace access to it (root, or CAP_SYS_PTRACE): a proxy
// without it gets `no_access`, never a guess. For the attribution thread only: it blocks.
#include "netbox/audit/record.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace netbox::proxy {

struct ScanBudget {
  std::size_t processes = 4096;     // /proc/PID/fd folders opened at most
  std::size_t descriptors = 65536;  // fd entries read at most, over all of them
  std::chrono::steady_clock::time_point deadline;
};

enum class ScanEnd { found, not_found, over_budget, no_access };

struct SocketOwner {
  ScanEnd end = ScanEnd::not_found;
  pid_t pid = 0;  // with found: in the proxy's PID namespace
};

// The first process, from `root` down its tree of children (parents before children), one
// of whose descriptors is the socket `inode`. A descriptor shared by several processes
// (inherited, or passed over a Unix socket) is found in the first of them. In a PID
// namespace whose init is `root`, every process of the namespace is in that tree (orphans
// are re-parented to its init).
SocketOwner find_socket_owner(pid_t root, std::uint64_t inode, const ScanBudget& budget);

// Whether process `pid` holds the socket `inode` still (a descriptor read again after
// describe_process: the pid was not reused meanwhile).
bool holds_socket(pid_t pid, std::uint64_t inode, std::size_t max_descriptors);

// Whether `pid` is a child of `ancestor`, or a child's child, and so on (from /proc/PID/stat's
// parents). Not `ancestor` itself. Reads a few /proc files: once per registration.
bool descends_from(pid_t pid, pid_t ancestor);

// What `pid` runs: its pid inside its own PID namespace (the last of NSpid), its
// executable's path (as its own mount namespace names it) and its command line's first
// words, made printable and bounded. Nullopt: it is gone.
std::optional<audit::ProcessOrigin> describe_process(pid_t pid);

// The command line's first words from /proc/PID/cmdline's bytes (NUL-separated): at most
// kArgvWords words and about kArgvBytes bytes, controls escaped; "…" marks a cut.
inline constexpr std::size_t kArgvWords = 6;
inline constexpr std::size_t kArgvBytes = 200;
std::string first_words(std::string_view cmdline);

}  // namespace netbox::proxy
