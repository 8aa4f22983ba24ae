// `netbox proxy` under a Type=notify unit: systemd learns from NOTIFY_SOCKET when the
// listeners are bound (READY=1) and when it is going away (STOPPING=1). The test plays
// systemd's part with a real datagram socket.
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace {

using namespace netbox::test;

class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~NotifySocket() { ::close(fd_); }
  bool bound() const { return bound_; }
  // The next datagram, or "" when none comes within `ms`.
  std::string next(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, ms) != 1) return "";
    char buf[512];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool bound_ = false;
};

bool connects_once(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

TEST(ServiceNotify, ProxyTellsTheServiceManagerWhenReadyAndWhenStopping) {
  TempDir dir;
  auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["example.test"]})");
  NotifySocket notify(dir.path() / "notify.sock");
  ASSERT_TRUE(notify.bound());
  const auto port = free_port();
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db"), dir.path() / "proxy.log",
                          {{"NOTIFY_SOCKET", (dir.path() / "notify.sock").string()}});
  const std::string ready = notify.next(20000);
  ASSERT_NE(ready.find("READY=1"), std::string::npos) << "no READY=1; proxy log:\n" << proxy.log();
  // Ready means bound: one connect succeeds at once, no polling.
  EXPECT_TRUE(connects_once(port));
  ASSERT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
  EXPECT_NE(notify.next(5000).find("STOPPING=1"), std::string::npos);
}

TEST(ServiceNotify, WithoutNotifySocketTheProxyRunsAsBefore) {
  TempDir dir;
  auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["example.test"]})");
  const auto port = free_port();
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db"), dir.path() / "proxy.log");
  EXPECT_TRUE(wait_for_port(port));
  EXPECT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
}

}  // namespace
