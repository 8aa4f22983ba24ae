#pragma once
// Leases of /30 networks from the launch subnet, safe across concurrent launchers:
// an flock on the state directory serialises allocation, and one file per lease
// records the owner (pid and start time) so `netbox gc` can tell dead owners.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace netbox::launcher {

struct Ipv4Network {
  std::uint32_t address = 0;  // host byte order, host bits zero
  int prefix = 0;
};

// "10.213.0.0/16"; nullopt when malformed or host bits are set.
std::optional<Ipv4Network> parse_ipv4_network(const std::string& text);
std::string ipv4_to_string(std::uint32_t address);

// A launched agent has no address: the /30 only numbers the launch (its cgroup's name, a
// shared proxy's synthetic pools) and holds its uid, unique among running launches.
struct Lease {
  std::uint32_t network = 0;     // the /30
  std::string name;              // "nbx" + 8 hex digits (older launchers named their veth so)
  std::filesystem::path file;    // the lease file
  // The agent's uid (and gid) of its own, when asked for (allocate_lease's own_uid):
  // leased with the /30, in the same file, so it is freed with it, at teardown or by gc.
  std::optional<uid_t> uid;
};

// The uids (and gids) netbox gives agents that would otherwise run as nobody, one per
// running launch, so no launch shares a per-user budget (processes, inotify instances,
// pending signals ...) with another: 2,000,000,000 to 2,000,065,535, above the ranges
// distributions and systemd hand out (system and regular users, DynamicUser, nspawn's
// container blocks) and below 2^31 (signed-uid trouble).
constexpr uid_t kFirstAgentUid = 2'000'000'000;
constexpr uid_t kAgentUidCount = 65'536;

// The lease's name for a /30: older launchers named their veth and its nftables table so.
std::string lease_name_for(std::uint32_t network);

// An exclusive flock on the state directory, released at scope exit.
class StateLock {
 public:
  explicit StateLock(const std::filesystem::path& state_dir);
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
 private:
  int fd_ = -1;
};

std::filesystem::path leases_dir(const std::filesystem::path& state_dir);

// Collects garbage of dead launchers, then leases the first free /30 of `pool` for
// `owner`, with `own_uid` also the lowest agent uid no live lease holds. Throws
// LaunchError: 2 for a pool smaller than a /30, 125 when exhausted.
Lease allocate_lease(const Ipv4Network& pool, const std::filesystem::path& state_dir, pid_t owner,
                     bool own_uid = false);
void release_lease(const Lease& lease);

// The synthetic pool of the agent on `lease` when it shares a running proxy with other
// launches (--proxy-control): one /22 of `range` (1,024 names at once) chosen by the
// lease's /30, so launches holding neighbouring /30s get disjoint pools (the proxy refuses
// an overlap: /30s 128 apart share a pool).
Ipv4Network synthetic_pool_for(const Lease& lease, const Ipv4Network& range);

// The agent's synthetic IPv6 pool under a shared proxy: the /80 of 2001:2::/48 (the IPv6
// benchmarking range) numbered by all 30 bits of the lease's /30, so launches sharing a
// proxy never overlap. (kIpv6LinkRange, which every netbox proxy counts among its launch
// subnets, holds the address the agent's loopback gets for getaddrinfo's sake.)
inline constexpr const char* kIpv6LinkRange = "fd00:6e62:7800::/48";
std::string synthetic_pool6_for(const Lease& lease);

// The kernel's start time of a process (field 22 of /proc/PID/stat); 0 if gone or a zombie
// (a launcher that died unreaped holds nothing: its leases and cgroups are garbage).
unsigned long long process_start_time(pid_t pid);

}  // namespace netbox::launcher
