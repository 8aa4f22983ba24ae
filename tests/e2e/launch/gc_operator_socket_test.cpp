// An embedded launch serves `netbox agent` on /run/netbox/launches/PID.sock; a launcher
// killed with SIGKILL cannot remove it. `netbox gc` does, and says so, and never removes the
// socket of a launch that still runs, nor one whose pid a later process holds while the
// socket still answers.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kLaunches = "/run/netbox/launches";

fs::path operator_socket(pid_t launcher) { return kLaunches / (std::to_string(launcher) + ".sock"); }

// A launch of `sleep`, embedded proxy, its operator socket made.
struct Sleeper {
  Sleeper(const Subnet& subnet, const test::TempDir& dir, const std::string& tag)
      : launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy",
                  (dir.path() / "policy.json").string(), "--audit-db", (dir.path() / (tag + ".db")).string(), "--",
                  kSh, "-c", "echo ready; exec sleep 120"},
                 dir.path(), tag) {}
  bool ready() {
    return eventually([&] { return launcher.out().find("ready") != std::string::npos && fs::exists(socket()); });
  }
  fs::path socket() const { return operator_socket(launcher.pid()); }
  Background launcher;
};

TEST(GcOperatorSocket, AKilledLaunchersSocketIsRemovedAndALiveOnesKept) {
  NETBOX_REQUIRE_ROOT();
  const auto dead_subnet = test_subnet(167);
  const auto live_subnet = test_subnet(168);
  test::TempDir dir;
  dir.write("policy.json", policy_json(8080));
  Sleeper dead(dead_subnet, dir, "dead");
  Sleeper live(live_subnet, dir, "live");
  ASSERT_TRUE(dead.ready()) << dead.launcher.err();
  ASSERT_TRUE(live.ready()) << live.launcher.err();
  const auto dead_socket = dead.socket();
  ::kill(dead.launcher.pid(), SIGKILL);
  EXPECT_EQ(dead.launcher.wait(), 137);
  ASSERT_TRUE(fs::exists(dead_socket)) << "SIGKILL left no socket: nothing to test";

  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed operator socket " + dead_socket.string() + " (launcher pid " +
                                std::to_string(dead.launcher.pid()) + " is gone)"));
  EXPECT_FALSE(fs::exists(dead_socket));
  EXPECT_TRUE(fs::exists(live.socket())) << "gc removed a live launch's socket";
  EXPECT_THAT(gc.out, Not(HasSubstr(live.socket().string())));
  expect_nothing_left(dead_subnet);
  ::kill(live.launcher.pid(), SIGTERM);
  live.launcher.wait();
  expect_nothing_left(live_subnet);
}

// A socket named for a pid that a process started after it holds (a reused pid): gone when
// nothing listens on it; kept while something does.
TEST(GcOperatorSocket, AReusedPidIsNoLauncherButAListeningSocketIsKept) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  Background reuser({"/bin/sleep", "120"}, dir.path(), "reuser");
  fs::create_directories(kLaunches);
  const auto path = operator_socket(reuser.pid());
  fs::remove(path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(fd, 4), 0);
  // Made an hour before its pid's holder started: that process is not its launcher.
  ASSERT_EQ(test::run({"/usr/bin/touch", "-h", "-d", "-1 hour", path.string()}).exit_code, 0);
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_TRUE(fs::exists(path)) << "something listens on it: kept";
  ::close(fd);  // now nobody does
  gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed operator socket " + path.string()));
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace netbox::launch_test
