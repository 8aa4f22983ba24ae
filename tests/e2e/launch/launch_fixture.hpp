#pragma once
// Helpers for the launcher's end-to-end tests: real namespaces, real veths, real
// nftables, the real netbox binary, upstream servers on loopback only.
#include "support/process.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace netbox::launch_test {

#define NETBOX_REQUIRE_ROOT()                                                                         \
  do {                                                                                                \
    if (::geteuid() != 0)                                                                             \
      GTEST_SKIP() << "needs root (network namespaces, veth links, nftables); CI runs these as root"; \
  } while (0)

// A TCP server answering every request with a fixed HTTP response; counts connections.
// With `barrier` > 0 it holds the answers until that many requests are waiting (or
// 60 s passed), so the clients are provably alive at the same time.
class HttpServer {
 public:
  explicit HttpServer(const std::string& bind_addr = "127.0.0.1", int barrier = 0);
  ~HttpServer();
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  static constexpr const char* kBody = "hello from upstream";

 private:
  void serve();
  int fd_ = -1;
  int stop_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  int barrier_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// A UDP socket on 0.0.0.0 counting what arrives.
class UdpSink {
 public:
  UdpSink();
  ~UdpSink();
  std::uint16_t port() const { return port_; }
  int packets();  // drains without blocking

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  int count_ = 0;
};

// A folder outside /tmp (which the agent sees fresh anyway) that the agent's user may
// search, as an operator's folder often is: under the build tree, or under /srv when the
// agent could not see the build tree. Removed at scope exit.
class HostDir {
 public:
  HostDir();
  ~HostDir();
  HostDir(const HostDir&) = delete;
  HostDir& operator=(const HostDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // A sub-folder (mode 0755 unless given), made if missing.
  std::filesystem::path folder(const std::string& name,
                               std::filesystem::perms mode = std::filesystem::perms(0755)) const;
  // A file the agent may read (mode 0644 unless given), holding `text`.
  std::filesystem::path file(const std::string& name, const std::string& text,
                             std::filesystem::perms mode = std::filesystem::perms(0644)) const;
  // Get.java, a java.net.http.HttpClient GET of its argument printing "java: STATUS BODY"
  // (run as `java Get.java URL`, the JDK's source launcher).
  std::filesystem::path java_get() const;

 private:
  std::filesystem::path path_;
};

// Each test launches from its own /24 of the default pool (10.213.100.0/24 ..
// 10.213.255.0/24), so it can check that nothing of its own is left behind while other
// tests run in parallel. The subnet is claimed for the life of the test process (a lock
// file under /run): no two test processes get the same one. `index` is a hint only (tried
// first; the same hint in one process gives the same subnet); test_subnet() takes any.
struct Subnet {
  int index = 0;
  std::string cidr;         // "10.213.123.0/24"
  std::string addr_prefix;  // "10.213.123."
  std::string veth_prefix;  // "nbx0ad57b"
};
Subnet test_subnet(int index);
Subnet test_subnet();

// No veth, nftables table or lease of this subnet remains.
void expect_nothing_left(const Subnet& subnet);

// The agent cgroups of this subnet's launches (named netbox-<veth prefix>-...), wherever
// under /sys/fs/cgroup the launcher put them.
std::vector<std::filesystem::path> agent_cgroups(const Subnet& subnet);
// None of them, and no record of one in /run/netbox/cgroups, remains.
void expect_no_cgroup_left(const Subnet& subnet);

// `netbox launch --subnet ... ARGS`; ARGS must contain the `--` and the command.
test::RunResult launch(const Subnet& subnet, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A policy pinning allowed.test and denied.test to 127.0.0.1 where only allowed.test
// is allowed, with internal.allow 127.0.0.1/32 and the upstream's port.
std::string policy_json(std::uint16_t upstream_port);

// A process in the background, its output in files.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::filesystem::path& out_dir, const std::string& tag);
  ~Background();  // SIGKILL if still running
  pid_t pid() const { return pid_; }
  int wait();     // shell-style exit status
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::filesystem::path out_, err_;
};

// A running `netbox proxy --control` with `policy`, its store and socket under `host`,
// plus `extra` flags; launches reach it with --proxy-control socket().
class SharedProxy {
 public:
  SharedProxy(const HostDir& host, const std::filesystem::path& policy, const std::vector<std::string>& extra = {});
  bool ready();  // its control socket exists (bounded wait)
  const std::filesystem::path& socket() const { return socket_; }
  const std::filesystem::path& store() const { return store_; }
  pid_t pid() const { return proxy_.pid(); }
  int stop();  // SIGTERM; its rows all written; its exit status
  std::string out() const { return proxy_.out(); }
  std::string err() const { return proxy_.err(); }

 private:
  std::filesystem::path store_;
  std::filesystem::path socket_;
  Background proxy_;
};

// Polls until `pred` holds (bounded); returns whether it did.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(30));
bool lease_exists(const Subnet& subnet);
// Network namespaces and mounts on the host: what a launch could leave behind.
std::set<std::string> network_namespaces();
std::size_t host_mounts();
// Every IPv4 and IPv6 address of the host's interfaces but loopback and link-local ones.
std::vector<std::string> host_addresses();
bool host_table_exists(const Subnet& subnet);


inline const char* kPython = "/usr/bin/python3";

// A plain HTTP server on [::1] (python3, in the background) answering every request with
// "hello over ipv6\n"; for the tests of the agent's IPv6 link.
class Ipv6LoopbackUpstream {
 public:
  explicit Ipv6LoopbackUpstream(const std::filesystem::path& out_dir);
  std::uint16_t port() const { return port_; }  // 0 when it did not start
  std::string err() const { return server_.err(); }
  static constexpr const char* kBody = "hello over ipv6\n";

 private:
  Background server_;
  std::uint16_t port_ = 0;
};
inline const char* kCurl = "/usr/bin/curl";
inline const char* kSh = "/bin/sh";

using netbox::test::query;  // support/sqlite_query.hpp

}  // namespace netbox::launch_test
