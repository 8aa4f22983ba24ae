// Launches by the hundred through one running `netbox proxy --control` (issue 24): each
// attaches and detaches an agent, and none may leave anything behind, in the proxy (a
// descriptor, memory) or on the host (a network namespace, a cgroup, a mount, a lease).
// A proxy that kept one socket per agent would run out of descriptors after a day of an
// agent's commands; one that kept a few kilobytes per agent would grow without bound.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;

std::size_t open_descriptors(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

std::string descriptor_targets(pid_t pid) {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    out += e.path().filename().string() + " -> " + fs::read_symlink(e.path(), ec).string() + "\n";
  return out;
}

// VmRSS in KiB.
long resident_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  return -1;
}


// The count: a launch through a running proxy took 42 ms on this 2-core machine at a load
// of 7 and 130 ms at 12, so 1,000 would take 45 s to two minutes of the suite's 45; 500 keep
// it near 20-60 s and still show a descriptor left per launch (500 of them) or 6 KiB left
// per launch (the RSS bound below). scripts/bench.sh's B6 churn does the full 1,000.
constexpr int kWarmup = 30;
#if defined(__SANITIZE_ADDRESS__)
// A sanitized launch is several times slower (seen: 500 took 208 s in CI); 150 still show a
// descriptor left per launch, and LeakSanitizer checks the proxy's heap when it stops.
constexpr int kLaunches = 150;
#else
constexpr int kLaunches = 500;
#endif
// What may grow that is not a leak: the audit store's SQLite page cache fills as the store
// grows (about 3 KiB of rows a launch) up to its bound, 2,000 KiB (cache_size -2000, SQLite's
// default), and stays there (measured: RSS 16.4 -> 18.8 MB over the first 650 launches,
// then +24 KiB over the next 200); 1 MiB more for jemalloc's freed pages not yet returned.
constexpr long kRssSlackKib = 2000 + 1024;

TEST(LaunchChurn, SequentialLaunchesThroughARunningProxyLeaveNothingBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(119);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())), {"--threads", "2"});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port()) + "/";
  // Every tenth agent makes a request (a session, a DNS answer, an upstream connection).
  auto launch_one = [&](int i) {
    std::vector<std::string> args{"--proxy-control", proxy.socket().string(), "--", "true"};
    if (i % 10 == 0) args = {"--proxy-control", proxy.socket().string(), "--", kCurl, "-sf", "-m", "20", url + std::to_string(i)};
    return launch(subnet, args);
  };
  for (int i = 0; i < kWarmup; ++i) ASSERT_EQ(launch_one(i).exit_code, 0) << "warm-up launch " << i;
  // The proxy detaches an agent when its control connection closes, just after the launch
  // returns: its descriptors settle first.
  std::size_t fds = 0;
  eventually([&] {
    const auto before = open_descriptors(proxy.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    fds = open_descriptors(proxy.pid());
    return fds == before;
  });
  const long rss = resident_kib(proxy.pid());
  const auto mounts = host_mounts();
  const auto namespaces = network_namespaces().size();

  for (int i = kWarmup; i < kWarmup + kLaunches; ++i) {
    auto r = launch_one(i);
    ASSERT_EQ(r.exit_code, 0) << "launch " << i << ": " << r.err;
    if (i % 10 == 0) {
      ASSERT_EQ(r.out, HttpServer::kBody) << "launch " << i;
    }
  }

  EXPECT_TRUE(eventually([&] { return open_descriptors(proxy.pid()) <= fds; }))
      << open_descriptors(proxy.pid()) << " descriptors in the proxy, " << fds << " before:\n" << descriptor_targets(proxy.pid());
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in its quarantine (256 MiB by default) before reusing
  // it, so a sanitized proxy's RSS grows with every allocation however little it keeps (seen
  // in CI: 340 MB -> 384 MB over 500 launches). The normal build bounds the RSS; here
  // LeakSanitizer reports what the proxy still holds unreachable when it stops (below).
  (void)rss;
#else
  long after = 0;
  EXPECT_TRUE(eventually([&] { return (after = resident_kib(proxy.pid())) <= rss + kRssSlackKib; }))
      << "the proxy's RSS grew from " << rss << " KiB to " << after << " KiB over " << kLaunches << " launches";
#endif
  EXPECT_EQ(host_mounts(), mounts);
  EXPECT_TRUE(eventually([&] { return network_namespaces().size() <= namespaces; }))
      << network_namespaces().size() << " network namespaces, " << namespaces << " before";
  expect_no_cgroup_left(subnet);
  expect_nothing_left(subnet);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT count(*) FROM agents WHERE exit_status = 0")[0][0],
            std::to_string(kWarmup + kLaunches));
  EXPECT_EQ(query(proxy.store(), "SELECT count(*) FROM requests WHERE decision = 'allow'")[0][0],
            std::to_string((kWarmup + kLaunches) / 10));
}

}  // namespace
}  // namespace netbox::launch_test
