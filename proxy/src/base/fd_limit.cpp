#include "base/fd_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>

namespace netbox::proxy {

namespace {

rlim_t nr_open() {
  std::ifstream f("/proc/sys/fs/nr_open");
  unsigned long long n = 0;
  if (f >> n && n > 0) return static_cast<rlim_t>(n);
  return 1 << 20;  // the kernel's default
}

}  // namespace

std::size_t raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  const rlim_t want = lim.rlim_max == RLIM_INFINITY ? nr_open() : lim.rlim_max;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= want) return lim.rlim_cur == RLIM_INFINITY ? want : lim.rlim_cur;
  rlimit next = lim;
  next.rlim_cur = want;
  if (::setrlimit(RLIMIT_NOFILE, &next) == 0) return want;
  return lim.rlim_cur;
}

std::size_t derived_client_connection_limit(std::size_t fd_limit, std::size_t reserve) {
  const std::size_t left = fd_limit > reserve ? fd_limit - reserve : 0;
  return std::max<std::size_t>(16, left / 2);
}

int dial_fd_ceiling(std::size_t fd_limit, std::size_t reserve) {
  const std::size_t kept = std::min(reserve, fd_limit / 4);
  const std::size_t ceiling = fd_limit - kept;
  return static_cast<int>(std::min<std::size_t>(ceiling, std::numeric_limits<int>::max()));
}

IdlePoolLimits idle_pool_limits(std::size_t fd_limit) {
  const std::size_t total = std::max<std::size_t>(8, fd_limit / 4);
  return {total, std::max<std::size_t>(2, total / 4)};
}

IdlePoolLimits per_thread(IdlePoolLimits limits, std::size_t threads) {
  if (threads == 0) threads = 1;
  return {std::max<std::size_t>(1, limits.total / threads), std::max<std::size_t>(1, limits.per_agent / threads)};
}

}  // namespace netbox::proxy
