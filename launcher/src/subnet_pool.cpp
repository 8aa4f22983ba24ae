#include "netbox/launcher/subnet_pool.hpp"

#include "netbox/launcher/gc.hpp"
#include "netbox/launcher/launch.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace netbox::launcher {

namespace fs = std::filesystem;

std::optional<Ipv4Network> parse_ipv4_network(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  std::string addr = text.substr(0, slash);
  std::string len = text.substr(slash + 1);
  in_addr a{};
  if (inet_pton(AF_INET, addr.c_str(), &a) != 1) return std::nullopt;
  if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int prefix = std::stoi(len);
  if (prefix < 0 || prefix > 32) return std::nullopt;
  std::uint32_t address = ntohl(a.s_addr);
  std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  if ((address & ~mask) != 0) return std::nullopt;
  return Ipv4Network{address, prefix};
}

std::string ipv4_to_string(std::uint32_t address) {
  in_addr a{htonl(address)};
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string lease_name_for(std::uint32_t network) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "nbx%08x", network);
  return buf;
}

fs::path leases_dir(const fs::path& state_dir) { return state_dir / "leases"; }

StateLock::StateLock(const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(leases_dir(state_dir), ec);
  if (ec) throw LaunchError(kExitLauncherFailure, "cannot create state directory " + state_dir.string() + ": " + ec.message());
  // The lock is on the directory itself, so no lock file is ever left behind.
  fd_ = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
    throw LaunchError(kExitLauncherFailure, "cannot lock state directory " + state_dir.string() + ": " + std::strerror(errno));
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

unsigned long long process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return 0;
  // A zombie (or a process being reaped) holds nothing any more: it counts as gone.
  if (stat[close_paren + 2] == 'Z' || stat[close_paren + 2] == 'X') return 0;
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string field;
  // Fields after the command name start at field 3; starttime is field 22.
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return 0;
  try {
    return std::stoull(field);
  } catch (...) {
    return 0;
  }
}

namespace {

// The agent uids the leases hold now (garbage already collected). Under the state lock.
std::set<uid_t> leased_uids(const fs::path& state_dir) {
  std::set<uid_t> held;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(leases_dir(state_dir), ec)) {
    std::ifstream in(entry.path());
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("uid") && j["uid"].is_number_unsigned()) held.insert(j["uid"].get<uid_t>());
  }
  return held;
}

uid_t free_agent_uid(const fs::path& state_dir) {
  const auto held = leased_uids(state_dir);
  for (uid_t u = kFirstAgentUid; u < kFirstAgentUid + kAgentUidCount; ++u)
    if (!held.contains(u)) return u;
  throw LaunchError(kExitLauncherFailure, "all " + std::to_string(kAgentUidCount) +
                                              " agent uids are leased by running launchers; wait for one to exit");
}

}  // namespace

Lease allocate_lease(const Ipv4Network& pool, const fs::path& state_dir, pid_t owner, bool own_uid) {
  if (pool.prefix > 30)
    throw LaunchError(kExitUsage, "--subnet " + ipv4_to_string(pool.address) + "/" + std::to_string(pool.prefix) +
                                      ": too small, it must hold at least one /30");
  StateLock lock(state_dir);
  collect_garbage_locked(state_dir, false);
  const std::optional<uid_t> uid = own_uid ? std::optional(free_agent_uid(state_dir)) : std::nullopt;
  const std::uint64_t blocks = std::uint64_t{1} << (30 - pool.prefix);
  for (std::uint64_t i = 0; i < blocks; ++i) {
    std::uint32_t network = pool.address + static_cast<std::uint32_t>(i * 4);
    fs::path file = leases_dir(state_dir) / ipv4_to_string(network);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw LaunchError(kExitLauncherFailure, "cannot write lease " + file.string() + ": " + std::strerror(errno));
    }
    Lease lease;
    lease.network = network;
    lease.name = lease_name_for(network);
    lease.file = file;
    lease.uid = uid;
    nlohmann::json j = {{"pid", owner},
                        {"start_time", process_start_time(owner)},
                        {"name", lease.name}};
    if (uid) j["uid"] = *uid;
    std::string text = j.dump() + "\n";
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) {
      fs::remove(file);
      throw LaunchError(kExitLauncherFailure, "cannot write lease " + file.string());
    }
    return lease;
  }
  throw LaunchError(kExitLauncherFailure, "subnet pool " + ipv4_to_string(pool.address) + "/" +
                                              std::to_string(pool.prefix) + " is exhausted: all " +
                                              std::to_string(blocks) +
                                              " /30 networks are leased by running launchers; "
                                              "wait for one to exit or pass a larger --subnet");
}

void release_lease(const Lease& lease) {
  std::error_code ec;
  fs::remove(lease.file, ec);
}

Ipv4Network synthetic_pool_for(const Lease& lease, const Ipv4Network& range) {
  constexpr int kPrefix = 22;
  const std::uint32_t slots = range.prefix >= kPrefix ? 1u : 1u << (kPrefix - range.prefix);
  // The /30's own number, not its place in --subnet: launches with different --subnet
  // values (tests use one /24 each) share a proxy too.
  const std::uint32_t index = (lease.network >> 2) % slots;
  return {range.address + (index << (32 - kPrefix)), std::max(kPrefix, range.prefix)};
}

std::string synthetic_pool6_for(const Lease& lease) {
  // All 30 bits of the /30's number, so no two leases share a pool under a shared proxy.
  const std::uint32_t index = lease.network >> 2;
  char pool[64];
  std::snprintf(pool, sizeof pool, "2001:2:0:%x:%x::/80", index >> 16, index & 0xffff);
  return pool;
}

}  // namespace netbox::launcher
